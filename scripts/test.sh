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
# The layering (import-linter's layers contract), style (ruff) and types (mypy), configured in
# pyproject.toml; each must report nothing.
"$VENV/bin/lint-imports"
"$VENV/bin/ruff" check ci_policy tests bench
"$VENV/bin/mypy"

# PostgreSQL server binaries for the metric-history store tests: tests/pgserver.py starts a
# throwaway server from them (as an unprivileged user when run as root). A machine without
# them gets Debian's postgresql package; the tests fail, never skip, when they are missing.
pg_server_bindir() {
  local dir
  if [ -n "${CI_POLICY_PG_BINDIR:-}" ] && [ -x "$CI_POLICY_PG_BINDIR/initdb" ] && [ -x "$CI_POLICY_PG_BINDIR/postgres" ]; then
    echo "$CI_POLICY_PG_BINDIR"
    return 0
  fi
  if command -v pg_config >/dev/null 2>&1; then
    dir=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return 0
    fi
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5rn); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return 0
    fi
  done
  dir=$(command -v initdb 2>/dev/null || true)
  if [ -n "$dir" ] && [ -x "$(dirname "$dir")/postgres" ]; then
    dirname "$dir"
    return 0
  fi
  return 1
}
if ! CI_POLICY_PG_BINDIR=$(pg_server_bindir); then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "scripts/test.sh: the PostgreSQL server is not installed and this user can neither apt-get install it" \
         "(not root, no sudo): install the postgresql package or set CI_POLICY_PG_BINDIR" >&2
    exit 1
  fi
  echo "scripts/test.sh: installing the PostgreSQL server (apt-get install postgresql) for the store tests" >&2
  apt_log=$(mktemp)
  if ! { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
         $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; } \
       >"$apt_log" 2>&1; then
    cat "$apt_log" >&2
    echo "scripts/test.sh: installing PostgreSQL failed" >&2
    exit 1
  fi
  rm -f "$apt_log"
  if ! CI_POLICY_PG_BINDIR=$(pg_server_bindir); then
    echo "scripts/test.sh: PostgreSQL was installed, but no initdb/postgres was found" >&2
    exit 1
  fi
fi
export CI_POLICY_PG_BINDIR

exec "$VENV/bin/python" -m pytest "$@"
