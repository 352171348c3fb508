#!/usr/bin/env bash
# The whole test suite: sets up .venv (see setup.sh) then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
exec .venv/bin/python -m pytest "$@"
