#!/usr/bin/env bash
# Create .venv (if missing) and install kubewerk with its dev extras into it.
# Safe to run repeatedly: pip skips what is already satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
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
