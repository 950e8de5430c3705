"""Known CI labels for the minirl repository.

This file is read as data by ci-policy (parsed, never imported). Every GPU
test registration must use at least one of these labels.
"""

KNOWN_LABELS = {
    "megatron": "Megatron-LM backend e2e tests",
    "fsdp": "FSDP backend e2e tests",
    "sglang": "rollout engine integration",
    "session": "session-server e2e tests",
    "rocm": "AMD ROCm tests",
    "long": "tests longer than 30 minutes, excluded from nightly",
}
