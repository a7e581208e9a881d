"""`mini-fix jobs`: the job ledger as a table or as JSON lines."""

from __future__ import annotations

import json
from datetime import datetime

from bot.jobs import Job
from bot.ledger import open_ledger
from bot.settings import Settings

COLUMNS = ("id", "repo", "issue", "kind", "status", "attempts", "created", "updated", "pr")


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def job_row(job: Job) -> dict[str, object]:
    """The columns `mini-fix jobs` shows for one job."""
    return {
        "id": job.id,
        "repo": job.repo,
        "issue": job.issue,
        "kind": str(job.kind),
        "status": str(job.status),
        "attempts": job.attempts,
        "created": _when(job.created_at),
        "updated": _when(job.updated_at),
        "pr": job.pr_url or "-",
        "error": job.error,
    }


def format_table(jobs: list[Job]) -> str:
    """A fixed-width table, newest first as the ledger lists them."""
    rows = [[str(job_row(job)[col]) for col in COLUMNS] for job in jobs]
    widths = [max([len(col), *(len(row[i]) for row in rows)]) for i, col in enumerate(COLUMNS)]
    lines = ["  ".join(col.upper().ljust(w) for col, w in zip(COLUMNS, widths, strict=True))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def print_jobs(settings: Settings, *, as_json: bool, limit: int) -> int:
    """Print the ledger's newest `limit` jobs."""
    ledger = open_ledger(settings)
    try:
        jobs = ledger.list(limit=limit)
    finally:
        ledger.close()
    if as_json:
        for job in jobs:
            print(json.dumps(job_row(job)))
    else:
        print(format_table(jobs) if jobs else "no jobs yet")
    return 0
