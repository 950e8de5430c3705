#!/usr/bin/env bash
# The whole test suite, from a fresh clone: create a virtualenv, install ci_policy with its
# test dependencies, dogfood `ci-policy lint` on this repository, then run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[test]"

"$VENV/bin/ci-policy" lint --repo .
"$VENV/bin/lint-imports"
exec "$VENV/bin/python" -m pytest "$@"
