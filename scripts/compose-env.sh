#!/usr/bin/env bash
# Fill in the host-specific values of a compose env file: DOCKER_GID, the group that owns the Docker socket.
# Usage: scripts/compose-env.sh [ENV_FILE]   (default deploy/.env; created from deploy/.env.example if missing)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
env_file="${1:-$here/deploy/.env}"
socket="${DOCKER_SOCKET:-/var/run/docker.sock}"

[ -S "$socket" ] || { echo "compose-env: no Docker socket at $socket (set DOCKER_SOCKET)" >&2; exit 1; }
if [ ! -e "$env_file" ]; then
    cp "$here/deploy/.env.example" "$env_file"
    chmod 600 "$env_file"
    echo "compose-env: created $env_file from deploy/.env.example"
fi
gid="$(stat -c %g "$socket")"
# Replace the line if there is one, else append: the rest of the file is left as it is.
if grep -q '^DOCKER_GID=' "$env_file"; then
    sed -i "s/^DOCKER_GID=.*/DOCKER_GID=$gid/" "$env_file"
else
    echo "DOCKER_GID=$gid" >>"$env_file"
fi
echo "compose-env: DOCKER_GID=$gid (group of $socket) in $env_file"
