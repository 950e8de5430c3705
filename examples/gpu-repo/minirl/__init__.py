"""minirl: a tiny RL-training library for language-model post-training."""

from minirl.advantages import compute_gae, normalize_advantages
from minirl.kl import kl_k1, kl_k3, mean_kl
from minirl.rollout import RolloutBuffer, Transition

__version__ = "0.1.0"

__all__ = [
    "RolloutBuffer",
    "Transition",
    "compute_gae",
    "kl_k1",
    "kl_k3",
    "mean_kl",
    "normalize_advantages",
]
