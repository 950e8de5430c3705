"""FSDP backend configuration (stub)."""

from __future__ import annotations

from dataclasses import dataclass

SHARDING_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD")


@dataclass
class FSDPConfig:
    sharding_strategy: str = "FULL_SHARD"
    cpu_offload: bool = False
    mixed_precision: str = "bf16"
    gradient_checkpointing: bool = True

    def __post_init__(self) -> None:
        if self.sharding_strategy not in SHARDING_STRATEGIES:
            raise ValueError(f"unknown sharding strategy: {self.sharding_strategy!r}")

    def shard_size(self, num_params: int, world_size: int) -> int:
        """Parameters held per rank (ceil division) under this strategy."""
        if world_size <= 0:
            raise ValueError("world size must be positive")
        if self.sharding_strategy == "NO_SHARD":
            return num_params
        return -(-num_params // world_size)
