#!/usr/bin/env bash
# See mini-fix work with no GitHub App and no GPU: a CPU model (llama.cpp), the real sandbox, a small repository
# with a real bug (calc: add() subtracts, from tests/support/buggy_repos.py), then the agent's steps and its patch.
#   scripts/demo.sh            # MINIFIX_REAL_MODEL_SIZE=0.5b for the faster, weaker model; DEMO_KEEP_MODEL=1 leaves it running
# First run: installs the venv, the Docker engine and images, compiles llama.cpp once (~13 min on 2 cores) and
# fetches the weights (1.1 GB); everything is cached, so a second run starts in seconds. Needs root for dockerd.
set -euo pipefail
cd "$(dirname "$0")/.."
export LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONUNBUFFERED=1  # progress lines show as they happen, even piped
SIZE="${MINIFIX_REAL_MODEL_SIZE:-1.5b}"
work="$(mktemp -d /tmp/mini-fix-demo.XXXXXX)"
demo_started=$SECONDS

step() {  # step NAME COMMAND...: run it, say how long it took; its exit status (set -e is off under `||`)
    local name="$1" started=$SECONDS status=0
    shift
    echo "demo: == $name"
    "$@" || status=$?
    echo "demo: -- $name: $((SECONDS - started))s (exit $status)"
    return "$status"
}

stop_model() { [[ "${DEMO_KEEP_MODEL:-}" == 1 ]] || scripts/ensure-model.sh stop >/dev/null 2>&1 || true; }

step "python venv (scripts/setup.sh)" scripts/setup.sh
step "Docker engine and sandbox image (scripts/ensure-docker.sh)" scripts/ensure-docker.sh
step "CPU model $SIZE (scripts/ensure-model.sh; compiles llama.cpp once)" \
    bash -c 'scripts/ensure-model.sh start | tail -n 1 >"$1"' _ "$work/api-base"
trap stop_model EXIT
api_base="$(cat "$work/api-base")"
step "the example repository (calc: add() subtracts)" .venv/bin/python - "$work/calc" <<'PY'
import sys
from pathlib import Path
from tests.support.buggy_repos import CALC, build
build(CALC, Path(sys.argv[1]))
print(f"demo: {sys.argv[1]}: {', '.join(sorted(CALC.files))}; the issue: {CALC.issue}")
PY
# Small budgets for a small model on a CPU: a few hundred tokens a reply, fifteen steps at most.
printf 'agent: {step_limit: 15}\nmodel: {model_kwargs: {max_tokens: 384, timeout: 240}}\n' >"$work/cpu-demo.yaml"
rc=0
step "mini-fix run (the agent in the sandbox; a few minutes on a CPU)" .venv/bin/mini-fix run --repo "$work/calc" \
    --task "$(.venv/bin/python -c 'from tests.support.buggy_repos import CALC; print(CALC.issue)')" \
    --config "$work/cpu-demo.yaml" --model "hosted_vllm/qwen2.5-coder-$SIZE" --api-base "$api_base" \
    --output "$work/out" || rc=$?
.venv/bin/python - "$work" <<'PY'
import json
import sys
from pathlib import Path
from bot.pipeline.attempts.transcript import steps_from_messages
from tests.support.buggy_repos import CALC, resolved

work = Path(sys.argv[1])
trajectory = json.loads((work / "out" / "trajectory.json").read_text())
steps = steps_from_messages(trajectory["messages"])
if not steps:  # a reply without exactly one command block is not kept (mini-swe-agent's rule): nothing ran
    print("\n--- no command ran: every reply broke the one-command format (a small model does; try the 1.5b)")
for step in steps:
    print(f"\n--- step {step.n} ({step.kind}, exit {step.returncode})")
    print(f"$ {step.command}" if step.command else step.thought[:400])
    print((step.output or "")[:600])
patch = (work / "out" / "patch.diff").read_text() if (work / "out" / "patch.diff").exists() else ""
info = trajectory.get("info", {})
print(f"\n=== exit status: {info.get('exit_status')}; model calls: {info.get('model_stats', {}).get('api_calls')}")
print("=== patch.diff:\n" + (patch or "(empty)"))
print("=== the hidden test (never shown to the model): " + ("PASSES" if resolved(CALC, patch, work) else "fails"))
PY
echo "demo: trajectory and patch in $work/out; the whole demo took $((SECONDS - demo_started))s"
exit "$rc"
