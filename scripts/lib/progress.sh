# Sourced by the setup scripts: a long step shows that it is alive, and its tool's chatter goes to a log.
#   with_progress PREFIX WHAT LOGFILE PROGRESS_CMD -- COMMAND...
# runs COMMAND with stdout and stderr appended to LOGFILE, printing "PREFIX: WHAT: Ns (PROGRESS)" every 15 s, where PROGRESS
# is what PROGRESS_CMD prints (a shell snippet given the log's path as $1; "" for none), and one line with the time
# when it ends; on failure the log's last 30 lines and its path. Returns the command's exit status.
with_progress() {
    local prefix="$1" what="$2" logfile="$3" progress="$4" started=$SECONDS pid rc=0 note polls=0 report=15
    local delays=(0.02 0.05 0.1 0.2 0.5)  # a quick step (pip with nothing to do) is not held for a whole second
    shift 5  # PREFIX WHAT LOGFILE PROGRESS_CMD --
    mkdir -p "$(dirname "$logfile")"
    "$@" >>"$logfile" 2>&1 </dev/null &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep "${delays[polls]:-1}"
        polls=$((polls + 1))
        # >= rather than a multiple of 15: a poll that lands at 16 s (a busy machine) still reports
        if (( SECONDS - started >= report )) && kill -0 "$pid" 2>/dev/null; then
            report=$(( (SECONDS - started) / 15 * 15 + 15 ))
            note=""
            [[ -z "$progress" ]] || note="$(bash -c "$progress" _ "$logfile" 2>/dev/null | tail -n 1 | cut -c1-100 || true)"
            echo "$prefix: $what: $((SECONDS - started))s${note:+ ($note)}" >&2
        fi
    done
    wait "$pid" || rc=$?
    if [[ $rc -ne 0 ]]; then
        tail -n 30 "$logfile" >&2
        echo "$prefix: $what failed (exit $rc); the whole output is in $logfile" >&2
        return "$rc"
    fi
    echo "$prefix: $what: done in $((SECONDS - started))s" >&2
}
