#!/usr/bin/env bash
# Create .venv (if missing) and install kubewerk with its dev extras into it.
# Safe to run repeatedly: pip skips what is already satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
elif ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  # a venv left half-made by an interrupted run (no pip yet): make it again
  echo "bootstrap: .venv has no pip (an interrupted bootstrap?); recreating it" >&2
  "$PY" -m venv --clear .venv
fi
if ! .venv/bin/python -c 'import kubewerk, pytest, kopf, kubernetes' 2>/dev/null \
   || [ pyproject.toml -nt .venv/.kubewerk-installed ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
  touch .venv/.kubewerk-installed
fi
# Debian's redis-server, for the Redis Streams bus tests (tests/lifecycle/redis_fixture.py
# starts its own on a free loopback port; where it is missing those tests are skipped).
# Installing needs root (CI runs as root); Debian's package keeps security updates.
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing Debian's redis-server (Redis bus tests)" >&2
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              redis-server >/dev/null; }; then
      echo "bootstrap: WARNING: apt-get could not install redis-server; the Redis bus tests" \
           "will be skipped" >&2
    fi
  else
    echo "bootstrap: redis-server is missing and needs root to install" \
         "(apt-get install redis-server); the Redis bus tests will be skipped" >&2
  fi
fi
# Debian's chromium and chromedriver, for the dashboard's browser test
# (tests/e2e/test_dashboard_browser.py drives them with selenium; where they are missing
# that test is skipped). Debian's packages keep security updates; nothing is downloaded
# by pip or selenium itself.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing Debian's chromium and chromium-driver (dashboard browser test)" >&2
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              chromium chromium-driver >/dev/null; }; then
      echo "bootstrap: WARNING: apt-get could not install chromium; the dashboard browser" \
           "test will be skipped" >&2
    fi
  else
    echo "bootstrap: chromium/chromedriver are missing and need root to install" \
         "(apt-get install chromium chromium-driver); the dashboard browser test will be skipped" >&2
  fi
fi
