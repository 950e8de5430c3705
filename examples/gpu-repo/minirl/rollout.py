"""A toy fixed-capacity rollout buffer."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator, List, Optional

from minirl.advantages import compute_gae


@dataclass(frozen=True)
class Transition:
    """One step of experience."""

    reward: float
    value: float
    logp: float
    done: bool = False


class RolloutBuffer:
    """Collects transitions until full, then yields advantage-annotated batches."""

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._items: List[Transition] = []

    def __len__(self) -> int:
        return len(self._items)

    @property
    def full(self) -> bool:
        return len(self._items) >= self.capacity

    def add(self, transition: Transition) -> None:
        if self.full:
            raise OverflowError("rollout buffer is full")
        self._items.append(transition)

    def clear(self) -> None:
        self._items.clear()

    def transitions(self) -> List[Transition]:
        return list(self._items)

    def advantages(self, last_value: float = 0.0, gamma: float = 0.99, lam: float = 0.95) -> List[float]:
        adv, _ = compute_gae(
            [t.reward for t in self._items],
            [t.value for t in self._items],
            [t.done for t in self._items],
            last_value=last_value,
            gamma=gamma,
            lam=lam,
        )
        return adv

    def minibatches(self, size: int, seed: Optional[int] = None) -> Iterator[List[Transition]]:
        """Yield shuffled minibatches covering every transition exactly once."""
        if size <= 0:
            raise ValueError("minibatch size must be positive")
        order = list(range(len(self._items)))
        random.Random(seed).shuffle(order)
        for start in range(0, len(order), size):
            yield [self._items[i] for i in order[start:start + size]]
