"""`.github/ci-policy.yml`: the repository's CI policy configuration, each section a module declaring its keys once.

`load.load_config` reads the file; this package imports nothing itself, so a command loads only its sections."""
