#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine (venv, Docker engine, sandbox image), then run them all:
# unit tests (fast, no Docker) and the Docker integration/end-to-end tests (markers `docker`, `e2e`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
scripts/ensure-docker.sh
export LITELLM_LOCAL_MODEL_COST_MAP=True
exec .venv/bin/pytest "$@"
