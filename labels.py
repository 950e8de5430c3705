"""CI labels of ci_policy's own test suites.

Read as data by `ci-policy` (with `ast`), never imported. A PR label `run-ci-<name>`
selects the tests registered with that label.
"""

KNOWN_LABELS = {}
