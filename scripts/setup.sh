#!/usr/bin/env bash
# Create .venv and install mini-fix into it (with the dev extras when given --dev). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
extras=""
[[ "${1:-}" == "--dev" ]] && extras="[dev]"
if [[ ! -x .venv/bin/python ]]; then
    "$PYTHON" -m venv .venv
    .venv/bin/pip install -q --upgrade pip
fi
.venv/bin/pip install -q -e ".${extras}"
echo "mini-fix installed in .venv ($(.venv/bin/python --version))"
