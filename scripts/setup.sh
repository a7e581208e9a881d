#!/usr/bin/env bash
# Create .venv and install mini-fix into it, with the postgres extra (psycopg: MINIFIX_DATABASE_URL=postgresql://…)
# and the dev extras when given --dev. Idempotent: pip runs only when pyproject.toml or the extras changed (a stamp
# file keyed by their hash); its output goes to a log, with a progress line while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
extras="postgres"
[[ "${1:-}" == "--dev" ]] && extras="postgres,dev"
log=.venv/pip-install.log
stamp=.venv/.mini-fix-installed
key="$(cat pyproject.toml - <<<"extras=$extras python=$PYTHON" | sha256sum | cut -c1-16)"

say() { echo "setup: $*"; }

if [[ -x .venv/bin/mini-fix && -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
    say "mini-fix already installed in .venv ($(.venv/bin/python --version)); pyproject.toml unchanged"
    exit 0
fi

# shellcheck source=lib/progress.sh
source scripts/lib/progress.sh
collected='echo "$(grep -c "^Collecting" "$1" || true) packages so far"'

if [[ ! -x .venv/bin/python ]]; then
    say "creating .venv with $("$PYTHON" --version)"
    "$PYTHON" -m venv .venv
fi
: >"$log"
pip=(.venv/bin/pip --disable-pip-version-check --no-input)
with_progress setup "upgrading pip" "$log" "" -- "${pip[@]}" install --upgrade pip
say "installing mini-fix[$extras] into .venv (a few minutes the first time; log: $log)"
with_progress setup "installing mini-fix[$extras]" "$log" "$collected" -- \
    "${pip[@]}" install --no-warn-script-location -e ".[$extras]"
echo "$key" >"$stamp"
say "mini-fix installed in .venv ($(.venv/bin/python --version))"
