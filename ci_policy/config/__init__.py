"""`.github/ci-policy.yml`: the repository's CI policy configuration, one module per section.

Each section declares its keys once in a field table; `top.parse_config` and `load.load_config` read the file.

- In: the checkout root and the config path (default `.github/ci-policy.yml`, `config.path`, read
  through `ci_policy.read.checkout`, so symlinks and oversized files are refused).
- Out: a frozen `Config` (`config.top`), or `InputErrors` listing every problem, each located at
  `file:line:col` with its field path (`stages[2].backend: expected one of cpu, cuda, rocm`)
  and a stable code (CP100-CP199, `ci_policy.config.codes`).
- Refused: unknown keys (with a did-you-mean), wrong types, YAML aliases/anchors,
  duplicate keys, a `requires` specifier the installed ci_policy does not satisfy.
- Layout: one module per section, each with the field table (`ci_policy.config.fields`)
  its keys are declared in once; `ci_policy.config.reference` renders the tables for the docs site.
  This package imports nothing itself: a command reading one section (a stage job's runner
  rules) imports that section's module, not every table and PyYAML.
"""
