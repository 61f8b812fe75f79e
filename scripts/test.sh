#!/usr/bin/env bash
# The whole test suite: lint, types, tests. Exit code is non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check src tests benchmarks examples
.venv/bin/ruff format --check src tests benchmarks examples
.venv/bin/mypy
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
