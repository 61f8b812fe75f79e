#!/usr/bin/env bash
# Set everything up (a .venv with kubewerk) and run the demo: the embedded API server,
# a sample CRD and objects, shown with kubectl. Pass --keep to leave the server running.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/kubewerk demo "$@"
