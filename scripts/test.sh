#!/usr/bin/env bash
# The whole test suite: sets up .venv (see setup.sh) then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
# the SimulEval cross-check of the latency metrics (tests/unit/test_eval_latency.py)
export SIMULEVAL_PYTHON="${SIMULEVAL_PYTHON:-$PWD/.venv/simuleval/bin/python}"
exec .venv/bin/python -m pytest "$@"
