"""The suite runner's retry rules: which failure output is infrastructure, never retried, or retriable.

- In: nothing; the defaults below, overridden by `runner.retry` in the configuration.
- Out: `RetryRules`, three tuples of regular expressions searched in a failed attempt's
  output tail by `ci_policy.adapters.runner.retry.classify`.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_INFRA = (
    r"Server failed to start",
    r"NCCL .*timeout",
    r"NCCL error.*(unhandled system error|remote process exited)",
    r"CUDA error: (an illegal memory access|unspecified launch failure).*\bECC\b",
    r"(Connection refused|Connection reset by peer).*(127\.0\.0\.1|localhost)",
    r"No space left on device",
    r"HTTPError: 50[234]",
)
DEFAULT_NEVER = (
    r"SyntaxError",
    r"IndentationError",
    r"ImportError",
    r"ModuleNotFoundError",
    r"NameError",
    r"CUDA out of memory",
    r"torch\.OutOfMemoryError",
    r"HIP out of memory",
)
DEFAULT_RETRIABLE = (
    r"AssertionError: .*(accuracy|throughput|latency|score|speed)",
    r"(accuracy|throughput|latency) .*(below|above|lower than|higher than|exceeds)",
)


@dataclass(frozen=True)
class RetryRules:
    infra: tuple[str, ...] = DEFAULT_INFRA
    never: tuple[str, ...] = DEFAULT_NEVER
    retriable: tuple[str, ...] = DEFAULT_RETRIABLE
