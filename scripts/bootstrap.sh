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
