#!/usr/bin/env bash
# The whole test suite: lint, types, tests. Exit code is non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check src tests benchmarks examples
.venv/bin/ruff format --check src tests benchmarks examples
.venv/bin/mypy
# Two workers, one test file each at a time (module fixtures stay shared): half the suite
# waits on subprocesses (kubectl, servers, operators), so two overlap well even on 2 cores.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile "$@"
