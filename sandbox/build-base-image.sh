#!/usr/bin/env bash
# Build a Debian base image with no registry: debootstrap a minimal root, then `docker import` it.
# Usage: sandbox/build-base-image.sh [IMAGE_NAME [SUITE]]   (needs root, debootstrap, docker)
#   IMAGE_NAME default mini-fix-base:trixie. SUITE default $MINIFIX_BASE_SUITE, else the name's tag when it is a
#   Debian suite (mini-fix-base:bookworm is bookworm), else trixie (Debian 13, the sandbox image's: Go 1.24,
#   Rust 1.85, Node.js 20, JDK 21, Python 3.13).
#   --if-missing: do nothing when the engine already has IMAGE_NAME (scripts/build-app-image.sh's bookworm base).
set -euo pipefail

if [ "${1:-}" = "--if-missing" ]; then
    shift
    if docker image inspect "${1:-mini-fix-base:trixie}" >/dev/null 2>&1; then
        exit 0
    fi
fi
name="${1:-mini-fix-base:trixie}"
tag=""
[[ "${name##*/}" == *:* ]] && tag="${name##*:}"
case "$tag" in
    bullseye | bookworm | trixie | forky | sid) tag_suite="$tag" ;;
    *) tag_suite=trixie ;;
esac
suite="${2:-${MINIFIX_BASE_SUITE:-$tag_suite}}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages="git,python3,python3-venv,python3-pip,python3-pytest,ca-certificates,bash,coreutils,procps"

# An older debootstrap (bookworm's before 1.0.128) may lack a script for a newer suite; Debian's suites all
# bootstrap the same way as sid, so its script stands in.
scripts="${DEBOOTSTRAP_SCRIPTS:-/usr/share/debootstrap/scripts}"
script=""
if [ -d "$scripts" ] && [ ! -e "$scripts/$suite" ]; then
    [ -e "$scripts/sid" ] || { echo "debootstrap knows neither $suite nor sid (update debootstrap)" >&2; exit 1; }
    script="$scripts/sid"
    echo "debootstrap has no script for $suite; using sid's"
fi

root="$(mktemp -d /tmp/mini-fix-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

log="${TMPDIR:-/tmp}/mini-fix-debootstrap-$suite-$$.log"
echo "debootstrap $suite ($packages) from $mirror into $root (1-4 minutes; log: $log)"
started=$SECONDS
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" ${script:+"$script"} >"$log" 2>&1 &
pid=$!
# A line every 15 s: debootstrap's own stage ("I: Retrieving …", "I: Unpacking …", "I: Configuring …") and the time.
# Polls quickly at first (a debootstrap that fails at once is not held for a second), then once a second.
delays=(0.02 0.05 0.1 0.2 0.5) polls=0 report=15
while kill -0 "$pid" 2>/dev/null; do
    sleep "${delays[polls]:-1}"
    polls=$((polls + 1))
    if (( SECONDS - started >= report )); then  # not a multiple of 15: a poll may land a second late
        report=$(( (SECONDS - started) / 15 * 15 + 15 ))
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
