#!/usr/bin/env bash
# Set up and run the App with the embedded defaults: SQLite ledger and queue in ./data, local Docker engine,
# webhook server and worker in one process. Needs MINIFIX_APP_ID, MINIFIX_PRIVATE_KEY_PATH (or
# MINIFIX_PRIVATE_KEY), MINIFIX_WEBHOOK_SECRET, MINIFIX_MODEL and MINIFIX_MODEL_API_BASE (see README.md).
# The credentials are checked right after the venv, before the (slow, first time) Docker engine and images.
set -euo pipefail
cd "$(dirname "$0")/.."
export LITELLM_LOCAL_MODEL_COST_MAP="${LITELLM_LOCAL_MODEL_COST_MAP:-True}"
scripts/setup.sh
.venv/bin/python -m bot.preflight
scripts/ensure-docker.sh
exec .venv/bin/mini-fix serve "$@"
