#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine (venv, Docker engine, sandbox image), run the static checks
# (scripts/lint.sh), then run the tests:
# unit tests (fast, no Docker), the PostgreSQL suite (marker `postgres`), the Docker integration/end-to-end tests
# (markers `docker`, `e2e`), the fault-injection tests in tests/faults/ (marker `faults`), deploy/ brought up for real with docker compose, with its faults (marker `compose`:
# builds the App's image and a PostgreSQL image from Debian's packages; about 6 minutes on a fresh machine), and the
# real-model tier (marker `realmodel`: a real Qwen2.5-Coder-1.5B on llama.cpp's CPU server; its fixture runs
# scripts/ensure-model.sh, which compiles llama.cpp once and caches it and the weights under
# ${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}; under CI=true a failed setup fails the tier).
set -euo pipefail
cd "$(dirname "$0")/.."
# The vLLM half of the real-model tier (tests/realmodel/test_vllm.py: vLLM's CPU build serving Qwen2.5-Coder-0.5B)
# starts in the background now, so its cached install (~3.4 GB, first run only), weight conversion and ~70 s start
# overlap the setup and the other tests; its fixture waits for it (and fails the tier in CI if it never comes up).
# Idle it costs no CPU but ~6 GB of memory. Stopped when this script ends. Only for the whole suite (CI): given
# test paths, the fixture starts it if the selection needs it.
if [ $# -eq 0 ] && [ "${MINIFIX_SKIP_REALMODEL:-}" != "1" ]; then
    mkdir -p "${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}/logs"
    scripts/ensure-vllm.sh start >"${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}/logs/ensure-vllm.log" 2>&1 &
    trap 'wait; scripts/ensure-vllm.sh stop 2>/dev/null || true' EXIT
fi
scripts/setup.sh --dev
scripts/ensure-docker.sh
# A real PostgreSQL from Debian's packages for the `postgres` tests (ledger/queue suite, many workers).
MINIFIX_TEST_POSTGRES_URL="${MINIFIX_TEST_POSTGRES_URL:-$(scripts/ensure-postgres.sh | tail -n1)}"
export MINIFIX_TEST_POSTGRES_URL
# `docker-compose config` validates deploy/compose*.yml and the compose tests bring them up (Debian ships compose
# v1; the v2 plugin is used where the docker CLI has it).
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/dev/null; }
# Headless Chromium for the viewer test (marker `browser`); MINIFIX_SKIP_BROWSER=1 skips both install and test.
[ "${MINIFIX_SKIP_BROWSER:-}" = "1" ] || scripts/ensure-chromium.sh
# The whole suite (CI) starts with the static checks; given test paths, only those tests run.
[ $# -ne 0 ] || scripts/lint.sh
export LITELLM_LOCAL_MODEL_COST_MAP=True
if [ $# -ne 0 ]; then
    exec .venv/bin/pytest "$@"
fi
# The whole suite: the unit tier (no Docker, no network, each test its own temporary state) on every core with
# pytest-xdist, then every other tier in one process (they share the engine, PostgreSQL and the model servers).
# A failing unit tier still lets the other tiers run, so one CI run shows every failure.
unit=0
# Two workers per core: a quarter of the tier's time is spent waiting on git and server subprocesses (measured on 2
# cores: 63 s with 2 workers, 57 s with 4; bench/RESULTS.md).
.venv/bin/pytest tests/unit -n "${MINIFIX_UNIT_WORKERS:-$((2 * $(nproc)))}" || unit=$?
# --durations=25: every CI log names the slowest tests of these tiers (where the next minutes to win are).
.venv/bin/pytest --ignore=tests/unit --durations=25
exit "$unit"
