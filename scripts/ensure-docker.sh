#!/usr/bin/env bash
# Make sure a Docker engine runs here and the sandbox images exist; safe to run again (does only what is missing).
# Needs root on Debian 12 or later. Builds everything offline except the apt packages: no registry is needed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The images' base: Debian trixie by debootstrap (its toolchains: Go 1.24, Rust 1.85, Node.js 20, JDK 21, Python
# 3.13). A mini-fix-base:<suite> name is built from that suite (MINIFIX_BASE_SUITE overrides).
base_image="${MINIFIX_BASE_IMAGE:-mini-fix-base:trixie}"
sandbox_image="${MINIFIX_SANDBOX_IMAGE:-mini-fix-sandbox:latest}"
# polyglot (default: Python, Node.js + npm, Go, Rust, a JDK with Maven) or slim (Python only); the slim image is
# also built as $slim_image (seconds: no packages to fetch) for operators who set MINIFIX_SANDBOX_IMAGE to it.
sandbox_profile="${MINIFIX_SANDBOX_PROFILE:-polyglot}"
slim_image="${MINIFIX_SLIM_SANDBOX_IMAGE:-mini-fix-sandbox:slim}"
proxy_image="${MINIFIX_PROXY_IMAGE:-mini-fix-proxy:latest}"
dockerd_log="${DOCKERD_LOG:-/var/log/dockerd.log}"
# --slim: only what a Python-only run needs (the demo): the engine, the base and the slim image, no proxy image; the
# polyglot image is built later by a plain run of this script.
slim_only=0
if [ "${1:-}" = "--slim" ]; then
    slim_only=1
    sandbox_profile=slim
    sandbox_image="$slim_image"
fi
wait_seconds="${DOCKERD_WAIT_SECONDS:-60}"

say() { echo "ensure-docker: $*"; }
die() { echo "ensure-docker: error: $*" >&2; exit 1; }

install_packages() {
    local missing=()
    command -v dockerd >/dev/null 2>&1 && command -v docker >/dev/null 2>&1 || missing+=(docker.io)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    if [ ${#missing[@]} -eq 0 ]; then
        say "docker.io and debootstrap already installed"
        return
    fi
    [ "$(id -u)" -eq 0 ] || die "need root to install ${missing[*]}"
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# A PID file left by an engine that no longer runs (a machine image taken while it ran, a crash) makes dockerd
# refuse to start; the PID in it may since have been reused by an unrelated process, so `kill -0` is not enough:
# the file is stale unless that PID is still the named program.
clear_stale_pidfile() {
    local file="$1" program="$2" pid
    [ -f "$file" ] || return 0
    pid="$(tr -dc '0-9' <"$file")"
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$program" ]; then
        return 0
    fi
    say "removing stale $file (pid ${pid:-none} is not $program)"
    rm -f "$file"
}

# pgrep without procps: is any process's name exactly $1?
program_running() { grep -qx "$1" /proc/[0-9]*/comm 2>/dev/null; }

start_engine() {
    if docker info >/dev/null 2>&1; then
        say "engine already running"
        return
    fi
    [ "$(id -u)" -eq 0 ] || die "no Docker engine answers and starting dockerd needs root"
    clear_stale_pidfile /var/run/docker.pid dockerd
    clear_stale_pidfile /var/run/docker/containerd/containerd.pid containerd
    if program_running dockerd; then
        say "a dockerd is running but not answering yet; waiting for it"
    else
        say "starting dockerd (log: $dockerd_log)"
        # setsid: the engine outlives the shell (and the process group) that started it.
        setsid nohup dockerd >"$dockerd_log" 2>&1 < /dev/null &
    fi
    local waited=0
    until docker info >/dev/null 2>&1; do
        if [ "$waited" -ge "$wait_seconds" ]; then
            tail -n 20 "$dockerd_log" >&2 || true
            die "dockerd did not answer within ${wait_seconds}s; see $dockerd_log"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    say "engine up after ${waited}s"
}

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# docker build with one line per Dockerfile step (not the steps' own output) as it starts, a line every 15 s while a
# step runs (its time and the build's last output line), and the build's time; its whole output in a log.
build_image() {
    local name="$1" context="$2" started=$SECONDS rc=0 logfile pid shown=0 step_started=$SECONDS line
    shift 2
    logfile="$(mktemp "${TMPDIR:-/tmp}/mini-fix-build.XXXXXX")"
    DOCKER_BUILDKIT=0 docker build --build-arg "BASE_IMAGE=$base_image" "$@" -t "$name" "$context" \
        >"$logfile" 2>&1 </dev/null &
    pid=$!
    while :; do
        while IFS= read -r line; do
            echo "    ${line:0:110}"
            shown=$((shown + 1))
            step_started=$SECONDS
        done < <(grep -E '^Step [0-9]+/[0-9]+ :' "$logfile" | tail -n "+$((shown + 1))")
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
        if (( SECONDS - step_started >= 15 && (SECONDS - step_started) % 15 == 0 )); then
            line="$(grep -v '^ *$' "$logfile" | tail -n 1 | tr -cd '[:print:]' | cut -c1-80)"
            echo "      ... $((SECONDS - step_started))s on this step${line:+ (last output: $line)}"
        fi
    done
    wait "$pid" || rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -n 30 "$logfile" >&2
        die "building $name failed (docker build exit $rc); the whole output is in $logfile"
    fi
    rm -f "$logfile"
    say "$name built in $((SECONDS - started))s"
}

build_images() {
    if image_exists "$base_image"; then
        say "base image $base_image present"
    else
        say "building base image $base_image (debootstrap: 1-4 minutes, progress every 15 s)"
        "$here/sandbox/build-base-image.sh" "$base_image"
    fi
    # Always build: the layer cache makes an unchanged Dockerfile cost a second, and a changed one is picked up.
    # The polyglot image's toolchains come from Debian's packages (2-10 minutes and about 2 GB on a fresh machine;
    # the Maven repository layer comes last, so changing it rebuilds in about a minute).
    say "building sandbox image $sandbox_image ($sandbox_profile) from $base_image"
    build_image "$sandbox_image" "$here/sandbox/image" --build-arg "PROFILE=$sandbox_profile"
    if [ "$slim_image" != "$sandbox_image" ]; then
        say "building slim sandbox image $slim_image from $base_image"
        build_image "$slim_image" "$here/sandbox/image" --build-arg PROFILE=slim
    fi
    # The setup phase's proxy (squid + iptables from Debian's packages): apt needs the Debian mirror once.
    if [ "$slim_only" = 1 ]; then
        say "proxy image not built (--slim: no setup phase needs it yet)"
    elif image_exists "$proxy_image" && [ "${MINIFIX_REBUILD_PROXY:-}" != "1" ]; then
        say "proxy image $proxy_image present"
    else
        say "building proxy image $proxy_image from $base_image"
        build_image "$proxy_image" "$here/sandbox/proxy"
    fi
}

install_packages
start_engine
build_images
say "ready: $(docker image inspect -f '{{.Id}}' "$sandbox_image" | cut -c1-19) $sandbox_image"
