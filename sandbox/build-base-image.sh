#!/usr/bin/env bash
# Build a Debian bookworm base image with no registry: debootstrap a minimal root, then `docker import` it.
# Usage: sandbox/build-base-image.sh [IMAGE_NAME]   (default mini-fix-base:bookworm; needs root, debootstrap, docker)
set -euo pipefail

name="${1:-mini-fix-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages="git,python3,python3-venv,python3-pip,python3-pytest,ca-certificates,bash,coreutils,procps"

root="$(mktemp -d /tmp/mini-fix-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

log=/tmp/mini-fix-debootstrap.log
echo "debootstrap bookworm ($packages) from $mirror into $root (1-4 minutes; log: $log)"
started=$SECONDS
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$log" 2>&1 &
pid=$!
# A line every 15 s: debootstrap's own stage ("I: Retrieving …", "I: Unpacking …", "I: Configuring …") and the time.
while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( (SECONDS - started) % 15 == 0 )); then
        stage="$(grep '^I: ' "$log" | tail -n 1 | cut -c4-80)"
        echo "debootstrap: $((SECONDS - started))s ${stage:-starting}"
    fi
done
wait "$pid" || {
    echo "debootstrap failed; see $log" >&2
    tail -n 20 "$log" >&2
    exit 1
}
echo "debootstrap: done in $((SECONDS - started))s"
# Keep the image small: package lists and caches are not needed at run time.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "docker import -> $name"
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$name"
