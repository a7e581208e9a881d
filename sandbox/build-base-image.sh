#!/usr/bin/env bash
# Build a Debian bookworm base image with no registry: debootstrap a minimal root, then `docker import` it.
# Usage: sandbox/build-base-image.sh [IMAGE_NAME]   (default mini-fix-base:bookworm; needs root, debootstrap, docker)
set -euo pipefail

name="${1:-mini-fix-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages="git,python3,ca-certificates,bash,coreutils,procps"

root="$(mktemp -d /tmp/mini-fix-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

echo "debootstrap bookworm ($packages) from $mirror into $root"
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >/tmp/mini-fix-debootstrap.log 2>&1 || {
    echo "debootstrap failed; see /tmp/mini-fix-debootstrap.log" >&2
    tail -n 20 /tmp/mini-fix-debootstrap.log >&2
    exit 1
}
# Keep the image small: package lists and caches are not needed at run time.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "docker import -> $name"
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$name"
