#!/usr/bin/env bash
# A real small coder model behind llama.cpp's OpenAI-compatible server on 127.0.0.1, for the `realmodel` tests,
# bench/real_model.py and the CPU demo. Not the production path (that is vLLM, see README.md).
#   scripts/ensure-model.sh start    # build/reuse the wheel, venv and weights; start; print the api base (last line)
#   scripts/ensure-model.sh status   # print the api base and exit 0 when it answers, else exit 1
#   scripts/ensure-model.sh running  # exit 0 when the server this script starts is running (its PID, no HTTP call:
#                                    # a llama.cpp server busy generating for someone else may not answer in time)
#   scripts/ensure-model.sh stop     # stop the server this script started
# Settings: MINIFIX_REAL_MODEL_SIZE (1.5b | 0.5b, default 1.5b), MINIFIX_REAL_MODEL_PORT (8765),
# MINIFIX_REAL_MODEL_ALIAS (served model name, default qwen2.5-coder-<size>), MINIFIX_REAL_MODEL_THREADS (2),
# MINIFIX_REAL_MODEL_CTX (8192). Everything is cached under ${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}:
# wheels/llama-x86-64-v3/ (llama-cpp-python compiled once, 6-15 minutes), llama-venv/, models/, run/ (PID and log files).
# Idempotent: `start` on a running server only prints its api base.
set -euo pipefail
cd "$(dirname "$0")/.."
ACTION="${1:-start}"
SIZE="${MINIFIX_REAL_MODEL_SIZE:-1.5b}"
PORT="${MINIFIX_REAL_MODEL_PORT:-8765}"
ALIAS="${MINIFIX_REAL_MODEL_ALIAS:-qwen2.5-coder-$SIZE}"
THREADS="${MINIFIX_REAL_MODEL_THREADS:-2}"
CTX="${MINIFIX_REAL_MODEL_CTX:-8192}"
LLAMA_VERSION=0.3.36
CACHE="${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}"
WHEELS="$CACHE/wheels/llama-x86-64-v3"  # the build flags below are part of the cached wheel's identity
VENV="$CACHE/llama-venv"
RUN="$CACHE/run"
PIDFILE="$RUN/llama-$PORT.pid"
LOGFILE="$RUN/llama-$PORT.log"
API_BASE="http://127.0.0.1:$PORT/v1"
# A portable x86-64-v3 (AVX2) build, not -march=native: on CPUs that report AMX, a native build uses AMX tiles,
# and where the kernel or hypervisor has not enabled them the server dies of a general protection fault
# (`ldtilecfg` in libggml-cpu) at its first completion.
BUILD_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"

log() { echo "ensure-model: $*" >&2; }

server_pid() {
    # The PID in the file, only while that process is still our llama.cpp server (PIDs get reused).
    local pid
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    [[ -n "$pid" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "llama_cpp.server" && echo "$pid"
}

answers() {
    # Generous: on a busy CPU the server answers slowly while it is generating for someone else.
    curl -fsS --max-time 30 "$API_BASE/models" 2>/dev/null | grep -q "\"$ALIAS\""
}

# shellcheck source=lib/progress.sh
source scripts/lib/progress.sh
ninja_step='grep -oE "\[[0-9]+/[0-9]+\]" "$1" | tail -n 1 | sed "s/^/build step /"'

build_wheel() {
    mkdir -p "$WHEELS"
    exec 8>"$WHEELS/.llama-build.lock"
    flock 8
    if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
        log "compiling llama-cpp-python $LLAMA_VERSION once (6-15 minutes on two cores); cached in $WHEELS"
        mkdir -p "$RUN"
        : >"$RUN/llama-build.log"
        CMAKE_ARGS="$BUILD_FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
            with_progress ensure-model "compiling llama.cpp" "$RUN/llama-build.log" "$ninja_step" -- \
            python3 -m pip wheel -v --disable-pip-version-check --no-deps --no-cache-dir \
            --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_VERSION" -w "$WHEELS"
    fi
    exec 8>&-
}

ensure_venv() {
    if "$VENV/bin/python" -c "import llama_cpp.server.app" >/dev/null 2>&1; then
        return
    fi
    build_wheel
    log "creating $VENV"
    python3 -m venv "$VENV"
    local wheel
    wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)"
    : >"$RUN/llama-venv.log"  # pip's chatter (this machine's index warnings included) goes to the log
    with_progress ensure-model "installing the server into $VENV" "$RUN/llama-venv.log" "" -- \
        "$VENV/bin/pip" install --disable-pip-version-check --upgrade pip "${wheel}[server]"
    "$VENV/bin/python" -c "import llama_cpp.server.app" >&2
}

start() {
    mkdir -p "$RUN"
    exec 9>"$RUN/llama-$PORT.lock"
    flock 9
    if [[ -n "$(server_pid)" ]]; then
        wait_ready  # ours is running (perhaps busy or still loading): never start a second one
        echo "$API_BASE"
        return
    fi
    if curl -fsS --max-time 5 "$API_BASE/models" >/dev/null 2>&1; then
        log "port $PORT answers but is not our $ALIAS server; set MINIFIX_REAL_MODEL_PORT"
        exit 1
    fi
    ensure_venv
    local model
    model="$(scripts/model-weights.sh "$SIZE" | tail -n1)"
    log "starting llama.cpp ($ALIAS, $THREADS threads, context $CTX) on 127.0.0.1:$PORT; log: $LOGFILE"
    # bash writes its own PID, then exec keeps it: the file names the server itself, not a wrapper. The server
    # must not inherit the lock (fd 9), or the next `start` would wait for it forever.
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
        "$VENV/bin/python" -m llama_cpp.server --model "$model" --model_alias "$ALIAS" \
        --host 127.0.0.1 --port "$PORT" --n_ctx "$CTX" --n_threads "$THREADS" \
        >"$LOGFILE" 2>&1 </dev/null 9>&- &
    wait_ready
    echo "$API_BASE"
}

wait_ready() {
    local deadline=$((SECONDS + 300))
    while ((SECONDS < deadline)); do
        answers && return
        [[ -s "$PIDFILE" && -z "$(server_pid)" ]] && break  # it died
        sleep 0.5
    done
    log "the server did not become ready; last lines of $LOGFILE:"
    tail -n 20 "$LOGFILE" >&2 || true
    stop
    exit 1
}

stop() {
    local pid
    pid="$(server_pid || true)"
    if [[ -n "$pid" ]]; then
        kill "$pid"
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
        log "stopped $pid"
    fi
    rm -f "$PIDFILE"
}

case "$ACTION" in
    start) start ;;
    stop) stop ;;
    status) if [[ -n "$(server_pid)" ]] && answers; then echo "$API_BASE"; else exit 1; fi ;;
    running) [[ -n "$(server_pid)" ]] ;;
    *) echo "usage: $0 start|stop|status|running" >&2; exit 2 ;;
esac
