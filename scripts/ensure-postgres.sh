#!/usr/bin/env bash
# Make sure a PostgreSQL server from Debian's packages answers on 127.0.0.1 with a `minifix` role and database.
# Idempotent. Prints the URL on its last line (export it as MINIFIX_TEST_POSTGRES_URL for the tests):
#   export MINIFIX_TEST_POSTGRES_URL="$(scripts/ensure-postgres.sh | tail -n1)"
# Runs as root (CI, containers); the cluster itself runs as the `postgres` user.
set -euo pipefail
PORT="${MINIFIX_PG_PORT:-5432}"
PASSWORD="${MINIFIX_PG_PASSWORD:-minifix}"

log() { echo "ensure-postgres: $*" >&2; }

if ! command -v pg_lsclusters >/dev/null 2>&1; then
    log "installing Debian's postgresql"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2 \
        || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; }
fi

read -r VERSION CLUSTER < <(pg_lsclusters --no-header | awk 'NR==1 {print $1, $2}')
if [[ -z "${VERSION:-}" ]]; then
    VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n1)"
    CLUSTER=main
    log "creating cluster $VERSION/$CLUSTER"
    pg_createcluster "$VERSION" "$CLUSTER" --port "$PORT" >&2
fi

if ! pg_lsclusters --no-header | awk -v v="$VERSION" -v c="$CLUSTER" '$1==v && $2==c' | grep -q online; then
    # A postmaster.pid left by a server that no longer runs (a machine image taken while it ran) whose PID now
    # belongs to another process makes PostgreSQL refuse to start: stale unless that PID is still a postgres.
    DATA_DIR="$(pg_lsclusters --no-header | awk -v v="$VERSION" -v c="$CLUSTER" '$1==v && $2==c {print $6}')"
    LOCK="$DATA_DIR/postmaster.pid"
    if [[ -f "$LOCK" ]]; then
        LOCK_PID="$(head -n1 "$LOCK" | tr -dc '0-9')"
        if [[ "$(cat "/proc/${LOCK_PID:-0}/comm" 2>/dev/null)" != postgres ]]; then
            log "removing stale $LOCK (pid ${LOCK_PID:-none} is not postgres)"
            rm -f "$LOCK"
        fi
    fi
    log "starting cluster $VERSION/$CLUSTER"
    pg_ctlcluster "$VERSION" "$CLUSTER" start >&2
fi
PORT="$(pg_lsclusters --no-header | awk -v v="$VERSION" -v c="$CLUSTER" '$1==v && $2==c {print $3}')"

for _ in $(seq 1 50); do
    pg_isready -q -h 127.0.0.1 -p "$PORT" && break
    sleep 0.2
done
pg_isready -h 127.0.0.1 -p "$PORT" >&2

as_postgres() { su postgres -s /bin/sh -c "$*"; }
if [[ "$(as_postgres "psql -p $PORT -tAc \"SELECT 1 FROM pg_roles WHERE rolname = 'minifix'\"")" != "1" ]]; then
    log "creating role minifix"
    as_postgres "psql -p $PORT -qc \"CREATE ROLE minifix LOGIN CREATEDB PASSWORD '$PASSWORD'\""
fi
if [[ "$(as_postgres "psql -p $PORT -tAc \"SELECT 1 FROM pg_database WHERE datname = 'minifix'\"")" != "1" ]]; then
    log "creating database minifix"
    as_postgres "createdb -p $PORT -O minifix minifix"
fi

echo "postgresql://minifix:${PASSWORD}@127.0.0.1:${PORT}/minifix"
