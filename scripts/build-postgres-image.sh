#!/usr/bin/env bash
# Build a PostgreSQL image from Debian's packages on the offline base (for the compose tests; production uses
# postgres:16). Usage: scripts/build-postgres-image.sh [TAG] [BASE_IMAGE]
set -euo pipefail
cd "$(dirname "$0")/.."
TAG="${1:-mini-fix-postgres:15}"
BASE_IMAGE="${2:-mini-fix-base:bookworm}"  # postgresql-15 is bookworm's
case "$BASE_IMAGE" in
    mini-fix-base:*) sandbox/build-base-image.sh --if-missing "$BASE_IMAGE" >&2 ;;
esac
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$TAG" tests/support/postgres_image >/dev/null
echo "$TAG"
