"""`mini-fix jobs`: the job ledger as a table or as JSON lines."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from typing import Any

from bot.forge_ids import forge_key
from bot.jobs import Job, JobStatus
from bot.ledger import open_ledger
from bot.ledger.pr_outcomes import FOLLOWUPS, describe, issue_key, pull_of, retry_counts
from bot.settings import Settings

COLUMNS = ("id", "repo", "issue", "kind", "status", "attempts", "created", "updated", "pr", "outcome")
Outcomes = dict[tuple[str, int], dict[str, Any]]
ERROR_WIDTH = 70  # a job's error in the table: its first line, cut (the whole text is in --json)
# How a job without an error or a PR event ended (or where it is), so no row reads "-".
ENDINGS = {
    JobStatus.QUEUED: "waiting for a worker",
    JobStatus.RUNNING: "running",
    JobStatus.SUCCEEDED: "succeeded",
    JobStatus.FAILED: "failed",
    JobStatus.CANCELLED: "cancelled",
    JobStatus.DENIED: "denied: the requester cannot write",
    JobStatus.SUPERSEDED: "superseded by a newer trigger",
    JobStatus.WAITING: "waiting for the issue's running job to end",
    JobStatus.FOLDED: "carried by a later run",
}


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def job_row(job: Job, outcomes: Outcomes | None = None, retries: int = 0, followups: int = 0) -> dict[str, object]:
    """The columns `mini-fix jobs` shows for one job; `outcome` is what happened to its PR since."""
    pull = pull_of(job.pr_url)
    outcome = (outcomes or {}).get((job.repo, pull)) if pull is not None else None
    return {
        "id": job.id,
        "repo": forge_key(job.repo, job.installation_id),  # `gitlab:group/project` on GitLab (bot/forge_ids.py)
        "issue": job.issue,
        "kind": str(job.kind),
        "status": str(job.status),
        "attempts": job.attempts,
        "created": _when(job.created_at),
        "updated": _when(job.updated_at),
        "pr": job.pr_url or "-",
        "outcome": ending(job, outcome, retries, followups),
        "pr_outcome": outcome,
        "retries": retries,
        "followups": followups,
        "error": job.error,
    }


def ending(job: Job, pr_outcome: dict[str, Any] | None, retries: int = 0, followups: int = 0) -> str:
    """What became of the job: its PR's fate when GitHub told us, else its error, else its status in words."""
    if pr_outcome:
        return describe(pr_outcome, retries, followups)
    if job.error:
        text = job.error
    elif job.status == JobStatus.SUCCEEDED and job.pr_url:
        text = "pull request open"
    else:
        text = ENDINGS.get(JobStatus(job.status), str(job.status))
    return ", ".join([text, *([describe(None, retries, followups)] if retries or followups else [])])


def format_table(jobs: list[Job], outcomes: Outcomes | None = None) -> str:
    """A fixed-width table, newest first as the ledger lists them."""
    shown = _rows(jobs, outcomes)
    rows = [[_cell(col, row[col]) for col in COLUMNS] for row in shown]
    widths = [max([len(col), *(len(row[i]) for row in rows)]) for i, col in enumerate(COLUMNS)]
    lines = ["  ".join(col.upper().ljust(w) for col, w in zip(COLUMNS, widths, strict=True))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _rows(jobs: list[Job], outcomes: Outcomes | None) -> list[dict[str, object]]:
    retries, followups = retry_counts(jobs), retry_counts(jobs, FOLLOWUPS)
    return [job_row(job, outcomes, retries.get(key, 0), followups.get(key, 0)) for job, key in _keyed(jobs)]


def _keyed(jobs: list[Job]) -> list[tuple[Job, tuple[str, int]]]:
    return [(job, issue_key(job)) for job in jobs]


def _cell(column: str, value: object) -> str:
    text = str(value)
    if column != "outcome":
        return text
    line = " ".join(text.split())  # an error may span lines: one line per job in the table
    return line if len(line) <= ERROR_WIDTH else line[: ERROR_WIDTH - 1] + "…"


def print_jobs(settings: Settings, *, as_json: bool, limit: int) -> int:
    """Print the ledger's newest `limit` jobs."""
    ledger = open_ledger(settings)
    try:
        jobs = ledger.list(limit=limit)
        outcomes = ledger.pr_outcomes()
    finally:
        ledger.close()
    try:
        if as_json:
            for row in _rows(jobs, outcomes):
                print(json.dumps(row))
        else:
            print(format_table(jobs, outcomes) if jobs else "no jobs yet")
        sys.stdout.flush()
    except BrokenPipeError:  # `mini-fix jobs | head`: the reader has all it wanted
        # Python flushes stdout again at exit and would report the closed pipe: point it at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
