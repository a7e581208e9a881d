#!/usr/bin/env bash
# See mini-fix work with no GitHub App and no GPU: a CPU model (llama.cpp), the real sandbox, a small repository with
# a real bug (scripts/demo/calc: add() subtracts), then what a reviewer would read: the agent's steps, its patch, the
# repository's tests and a test of the bug before and after the change, and whether the bug was fixed.
#   scripts/demo.sh
# Settings (all optional):
#   MINIFIX_REAL_MODEL_SIZE=0.5b     the faster, weaker model (default 1.5b)
#   MINIFIX_DEMO_API_BASE=URL        use this OpenAI-compatible server instead of building and starting llama.cpp
#                                    (with MINIFIX_DEMO_MODEL, a litellm name, default hosted_vllm/qwen2.5-coder-SIZE);
#                                    CI points it at a scripted server (tests/e2e/test_demo.py)
#   MINIFIX_DEMO_STEP_LIMIT=N        the agent's step limit (default 15, scripts/demo/cpu.yaml)
#   MINIFIX_DEMO_IMAGE=IMAGE         the sandbox image (default mini-fix-sandbox:slim, Python only: built in about a
#                                    minute; scripts/ensure-docker.sh without --slim builds the polyglot one)
#   DEMO_KEEP_MODEL=1                leave the model server running at the end
# The model server is stopped at the end only when this script started it.
# First run: the venv, the Docker engine and the slim image, llama.cpp compiled once and the weights (1.1 GB), each
# step with its progress and time; everything is cached, so a second run starts in seconds. Needs root for dockerd.
# Nothing here imports mini-fix's code: the demo uses the commands a user has (`mini-fix run`, `mini-fix show`).
set -euo pipefail
cd "$(dirname "$0")/.."
export LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONUNBUFFERED=1  # progress lines show as they happen, even piped
SIZE="${MINIFIX_REAL_MODEL_SIZE:-1.5b}"
IMAGE="${MINIFIX_DEMO_IMAGE:-mini-fix-sandbox:slim}"
API_BASE="${MINIFIX_DEMO_API_BASE:-}"
MODEL="${MINIFIX_DEMO_MODEL:-hosted_vllm/qwen2.5-coder-$SIZE}"
DEMO=scripts/demo/calc
work="$(mktemp -d "${TMPDIR:-/tmp}/mini-fix-demo.XXXXXX")"
demo_started=$SECONDS

step() {  # step NAME COMMAND...: run it, say how long it took; its exit status (set -e is off under `||`)
    local name="$1" started=$SECONDS status=0
    shift
    echo "demo: == $name"
    "$@" || status=$?
    echo "demo: -- $name: $((SECONDS - started))s (exit $status)"
    return "$status"
}

step "python venv (scripts/setup.sh)" scripts/setup.sh
if [[ "$IMAGE" == "mini-fix-sandbox:slim" ]]; then
    step "Docker engine and the slim sandbox image (scripts/ensure-docker.sh --slim)" scripts/ensure-docker.sh --slim
else
    step "Docker engine and sandbox images (scripts/ensure-docker.sh)" scripts/ensure-docker.sh
fi

started_model=0
if [[ -z "$API_BASE" ]]; then
    # Decided from the server's own PID file, not an HTTP call (a server busy generating may not answer in time):
    # a server someone else started is left running.
    scripts/ensure-model.sh running || started_model=1
    step "CPU model $SIZE (scripts/ensure-model.sh; compiles llama.cpp once)" \
        bash -c 'scripts/ensure-model.sh start | tail -n 1 >"$1"' _ "$work/api-base"
    API_BASE="$(cat "$work/api-base")"
fi
stop_model() {
    if [[ "$started_model" == 1 && "${DEMO_KEEP_MODEL:-}" != 1 ]]; then
        scripts/ensure-model.sh stop >/dev/null 2>&1 || true
    fi
}
trap stop_model EXIT

make_repo() {  # make_repo DIR: the example repository as a git checkout with one commit
    cp -R "$DEMO/repo" "$1"
    git -C "$1" init -q -b main
    git -C "$1" add -A
    git -C "$1" -c user.name=demo -c user.email=demo@example.com commit -qm "calc: arithmetic helpers"
}
step "the example repository ($DEMO: $(cat "$DEMO/issue.md"))" make_repo "$work/calc"

# A `-c` file replaces prompts/agent.yaml (mini-swe-agent's rule), so the demo names it first and lays its budgets on.
config=(-c prompts/agent.yaml -c scripts/demo/cpu.yaml)
[[ -z "${MINIFIX_DEMO_STEP_LIMIT:-}" ]] || config+=(-c "agent.step_limit=$MINIFIX_DEMO_STEP_LIMIT")
rc=0
step "mini-fix run (the agent in the sandbox; a few minutes on a CPU)" .venv/bin/mini-fix run --repo "$work/calc" \
    --task-file "$DEMO/issue.md" "${config[@]}" --model "$MODEL" --api-base "$API_BASE" --image "$IMAGE" \
    --output "$work/out" || rc=$?
if [[ ! -f "$work/out/trajectory.json" ]]; then
    echo "demo: mini-fix run ended (exit $rc) before the agent ran; see the lines above"
    exit "$rc"
fi

echo
echo "demo: == what a reviewer reads (mini-fix show $work/out)"
.venv/bin/mini-fix show "$work/out" || true

# The bug's own test, never shown to the model, and the repository's tests, before and after the change: run in the
# sandbox image with no network as an unprivileged user (the change is the model's code: never run it on the host).
check() {  # check DIR ARGS...: exit status of `python3 -m unittest ARGS...` in DIR, in a throwaway container
    local dir="$1"
    shift
    docker run --rm --network none --user 65534:65534 --memory 512m --pids-limit 128 --cap-drop ALL \
        --security-opt no-new-privileges -e PYTHONDONTWRITEBYTECODE=1 -v "$dir:/repo:ro" -w /repo "$IMAGE" \
        timeout 60 python3 -m unittest "$@" >>"$work/check.log" 2>&1
}
verdict() { if check "$@"; then echo pass; else echo FAIL; fi; }
for state in before after; do
    make_repo "$work/$state" >/dev/null
    cp "$DEMO/hidden_test.py" "$work/$state/hidden_check.py"  # outside tests/: not one of the repository's tests
done
applied=yes
if [[ -s "$work/out/patch.diff" ]]; then
    git -C "$work/after" apply "$work/out/patch.diff" 2>"$work/apply.log" || applied=no
fi
echo
echo "demo: == the checks, before and after the change (in the sandbox image, no network)"
echo "demo:    the repository's tests (python3 -m unittest discover): before $(verdict "$work/before" discover -s tests -t .), after $(verdict "$work/after" discover -s tests -t .)"
before="$(verdict "$work/before" hidden_check)"
after="$(verdict "$work/after" hidden_check)"
echo "demo:    the bug's own test (never shown to the model):     before $before, after $after"
if [[ ! -s "$work/out/patch.diff" ]]; then
    echo "demo: RESULT: the bug is NOT fixed: the agent proposed no change (a small model on a CPU often does not)"
elif [[ "$applied" == no ]]; then
    echo "demo: RESULT: the bug is NOT fixed: the patch does not apply to the repository ($(head -n1 "$work/apply.log"))"
elif [[ "$before" == FAIL && "$after" == pass ]]; then
    echo "demo: RESULT: the bug is FIXED: its test fails before the change and passes after it"
else
    echo "demo: RESULT: the bug is NOT fixed: its test $( [[ "$after" == pass ]] && echo "passes" || echo "still fails") after the change"
fi
echo "demo: trajectory and patch in $work/out; the whole demo took $((SECONDS - demo_started))s"
# The demo ran whether or not the model fixed the bug (exit 1 of `mini-fix run`: nothing submitted); a configuration
# or sandbox failure (2, 3) is the demo's own failure.
[[ "$rc" -le 1 ]] || exit "$rc"
