# finding 1: label descriptions carrying `::warning::`, `##[error]`, a CR and a bidi override.
KNOWN_LABELS = {
    "megatron": "Megatron\r::set-output name=PWNED::1 ##[error]PWNED \u202e",
    "fsdp": "::warning::PWNED",
}
