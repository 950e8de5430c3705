#!/usr/bin/env bash
# The whole test suite, from a fresh clone: create a virtualenv, install ci_policy with its
# test dependencies, dogfood `ci-policy lint` on this repository, build and check the sdist and
# wheel, install the Debian packages the tests need (shellcheck, PostgreSQL, Chromium) and the npm
# packages of GitHub's expression engine and workflow parser (tests/github_js) and of Mermaid
# (tests/mermaid_js), then run pytest.
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

# Debian packages the tests need, installed when missing: as root, else through sudo, else a
# clear error (the tests fail, never skip, without them).
apt_install() {
  local package=$1 what=$2 why=$3 otherwise=$4 sudo apt_log
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "scripts/test.sh: $what is not installed and this user can neither apt-get install it" \
         "(not root, no sudo): $otherwise" >&2
    exit 1
  fi
  echo "scripts/test.sh: installing $what (apt-get install $package) $why" >&2
  apt_log=$(mktemp)
  if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package"; } \
       >"$apt_log" 2>&1; then
    cat "$apt_log" >&2
    echo "scripts/test.sh: installing $package failed" >&2
    exit 1
  fi
  rm -f "$apt_log"
}

# The distributions: an sdist and a wheel that build and whose metadata PyPI would accept
# (twine check --strict), the wheel built from the sdist as pip builds one, into a temporary
# directory; the build log is printed only on failure.
dist=$(mktemp -d)
build_log="$dist/build.log"
if ! "$VENV/bin/python" -m build --outdir "$dist" . >"$build_log" 2>&1 ||
   ! "$VENV/bin/twine" check --strict "$dist"/*.whl "$dist"/*.tar.gz >>"$build_log" 2>&1; then
  cat "$build_log" >&2
  echo "scripts/test.sh: building or checking the sdist and wheel failed" >&2
  exit 1
fi
rm -rf "$dist"

# Debian's shellcheck, for the run: blocks of every workflow and action (tests/test_workflow_lint.py).
if ! command -v shellcheck >/dev/null 2>&1; then
  apt_install shellcheck "shellcheck" "for the workflow lint tests" "install Debian's shellcheck package"
fi

# Debian's chromium, in which the chart tests draw every Mermaid chart with mermaid itself
# (tests/mermaid_render.py; CI_POLICY_CHROMIUM names another executable).
if [ ! -x "${CI_POLICY_CHROMIUM:-/usr/bin/chromium}" ]; then
  apt_install chromium "Chromium" "for the Mermaid chart tests" \
    "install Debian's chromium package or set CI_POLICY_CHROMIUM"
fi

# GitHub's own expression engine and workflow parser (@actions/expressions, @actions/workflow-parser),
# which the workflow tests run on node (tests/github_js.py): installed exactly as
# tests/github_js/package-lock.json pins them, the log printed only on failure.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "scripts/test.sh: node and npm are needed: the workflow tests run GitHub's expression engine" \
       "and workflow parser on node (>= 20); install Debian's nodejs and npm packages" >&2
  exit 1
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  echo "scripts/test.sh: node $(node --version) is too old: @actions/workflow-parser needs node >= 20" >&2
  exit 1
fi
npm_log=$(mktemp)
if ! npm ci --prefix tests/github_js --no-audit --no-fund --ignore-scripts --loglevel=error >"$npm_log" 2>&1; then
  cat "$npm_log" >&2
  echo "scripts/test.sh: npm ci in tests/github_js failed" >&2
  exit 1
fi
# Mermaid and playwright-core (which drives the Chromium above; it downloads no browser with
# --ignore-scripts), exactly as tests/mermaid_js/package-lock.json pins them.
if ! npm ci --prefix tests/mermaid_js --no-audit --no-fund --ignore-scripts --loglevel=error >"$npm_log" 2>&1; then
  cat "$npm_log" >&2
  echo "scripts/test.sh: npm ci in tests/mermaid_js failed" >&2
  exit 1
fi
rm -f "$npm_log"

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
  apt_install postgresql "the PostgreSQL server" "for the store tests" \
    "install the postgresql package or set CI_POLICY_PG_BINDIR"
  if ! CI_POLICY_PG_BINDIR=$(pg_server_bindir); then
    echo "scripts/test.sh: PostgreSQL was installed, but no initdb/postgres was found" >&2
    exit 1
  fi
fi
export CI_POLICY_PG_BINDIR

exec "$VENV/bin/python" -m pytest "$@"
