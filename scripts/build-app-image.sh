#!/usr/bin/env bash
# Build the App's image (Dockerfile) without network in the build: wheels are made on the host first.
# Usage: scripts/build-app-image.sh [BASE_IMAGE] [TAG]   (default base: the offline mini-fix-base:bookworm)
# The App's base stays bookworm: its Python (3.11) must match the host's, which builds the wheels. The image carries
# the sandbox's base as a root filesystem tarball: MINIFIX_BASE_IMAGE, default mini-fix-base:trixie (as
# scripts/ensure-docker.sh) with an offline App base, else debian:trixie-slim. A missing mini-fix-base:<suite> base
# is made with sandbox/build-base-image.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_IMAGE="${1:-mini-fix-base:bookworm}"
TAG="${2:-mini-fix:latest}"
case "$BASE_IMAGE" in
    mini-fix-base:*) SANDBOX_BASE_IMAGE="${MINIFIX_BASE_IMAGE:-mini-fix-base:trixie}" ;;
    *) SANDBOX_BASE_IMAGE="${MINIFIX_BASE_IMAGE:-debian:trixie-slim}" ;;
esac
for base in "$BASE_IMAGE" "$SANDBOX_BASE_IMAGE"; do
    case "$base" in
        mini-fix-base:*) sandbox/build-base-image.sh --if-missing "$base" >&2 ;;
    esac
done
PIP=.venv/bin/pip
mkdir -p build/wheelhouse
# setuptools reuses build/lib: a module deleted or moved in the tree would otherwise still ship in the wheel.
rm -rf build/lib build/bdist.* build/wheelhouse/mini_fix-*.whl
# The project itself, every runtime dependency (with the postgres extra), and pip to install them in the image.
"$PIP" wheel -q --wheel-dir build/wheelhouse ".[postgres]"
"$PIP" download -q --only-binary=:all: --dest build/wheelhouse pip
rm -f build/wheelhouse/mini_fix-*.whl.tmp
docker build --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg SANDBOX_BASE_IMAGE="$SANDBOX_BASE_IMAGE" -t "$TAG" .
echo "$TAG"
