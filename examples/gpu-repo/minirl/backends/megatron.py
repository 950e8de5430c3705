"""Megatron-LM backend configuration (stub)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class MegatronConfig:
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    context_parallel: int = 1
    sequence_parallel: bool = False
    micro_batch_size: int = 1

    @property
    def model_parallel_size(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    def data_parallel_size(self, world_size: int) -> int:
        """Data-parallel degree for ``world_size`` GPUs."""
        mp = self.model_parallel_size
        if world_size <= 0 or world_size % mp:
            raise ValueError(f"world size {world_size} is not divisible by model parallel size {mp}")
        return world_size // mp
