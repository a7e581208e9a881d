"""What happened to the pull requests mini-fix opened: merged, closed, human pushes, review verdicts.

One row per (repository, PR) in the ledger's database, written by the webhook path (an upsert per event) and
read by `mini-fix jobs`, /runs, the metrics and `mini-fix export`. The SQL here runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
import time
from typing import Any

from bot.jobs import REVIEW_STATES, Job, JobKind, PrEvent

REVIEW_COLUMNS = {state: state for state in REVIEW_STATES}  # each verdict's counter column
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS pr_outcomes (repo TEXT NOT NULL, pull INTEGER NOT NULL, "
    "state TEXT NOT NULL DEFAULT 'open', merged INTEGER NOT NULL DEFAULT 0, human_pushes INTEGER NOT NULL DEFAULT 0, "
    "approved INTEGER NOT NULL DEFAULT 0, changes_requested INTEGER NOT NULL DEFAULT 0, "
    "commented INTEGER NOT NULL DEFAULT 0, updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (repo, pull))"
)
_INSERT = "INSERT INTO pr_outcomes (repo, pull, state, merged, updated_at) VALUES (?, ?, ?, ?, ?) "
_SET_STATE = "ON CONFLICT (repo, pull) DO UPDATE SET state = excluded.state, merged = excluded.merged, "
_PULL_URL = re.compile(r"/pull/(\d+)/?$")
COLUMNS = "repo, pull, state, merged, human_pushes, approved, changes_requested, commented"


# Only a PR the App opened for a job: the ledger holds a job of that repository whose PR url ends in its number.
_OURS = "SELECT 1 FROM jobs WHERE repo = ? AND pr_url LIKE ? LIMIT 1"


def is_ours(conn: Any, param: str, repo: str, pull: int) -> bool:
    """Whether the ledger recorded PR `pull` of `repo` for one of its jobs."""
    return conn.execute(_OURS.replace("?", param), (repo, f"%/pull/{pull}")).fetchone() is not None


def record(conn: Any, param: str, event: PrEvent) -> bool:
    """Upsert the PR's row for one event (`param` is the driver's placeholder); False (nothing written) when the
    PR is not one the ledger recorded for a job."""
    if not is_ours(conn, param, event.repo, event.pull):
        return False
    now = time.time()
    if event.kind in ("closed", "reopened"):
        state = "closed" if event.kind == "closed" else "open"
        merged = int(event.kind == "closed" and event.merged)
        text = _INSERT + _SET_STATE + "updated_at = excluded.updated_at"
        params: tuple[Any, ...] = (event.repo, event.pull, state, merged, now)
    else:
        column = "human_pushes" if event.kind == "human_push" else REVIEW_COLUMNS[event.review]
        text = (
            f"INSERT INTO pr_outcomes (repo, pull, {column}, updated_at) VALUES (?, ?, 1, ?) "
            f"ON CONFLICT (repo, pull) DO UPDATE SET {column} = pr_outcomes.{column} + 1, "
            "updated_at = excluded.updated_at"
        )
        params = (event.repo, event.pull, now)
    conn.execute(text.replace("?", param), params)
    return True


def load(conn: Any) -> dict[tuple[str, int], dict[str, Any]]:
    """Every PR's outcome by (repo, pull)."""
    rows = conn.execute(f"SELECT {COLUMNS} FROM pr_outcomes").fetchall()
    return {(r[0], int(r[1])): as_outcome(r) for r in rows}


def as_outcome(row: tuple[Any, ...]) -> dict[str, Any]:
    """One row as the outcome dict the reports show."""
    _repo, _pull, state, merged, pushes, approved, changes, commented = row
    return {
        "state": "merged" if merged else str(state),
        "merged": bool(merged),
        "human_pushes": int(pushes),
        "reviews": {"approved": int(approved), "changes_requested": int(changes), "commented": int(commented)},
    }


def pull_of(pr_url: str | None) -> int | None:
    """The PR number in a PR url, or None."""
    match = _PULL_URL.search(pr_url or "")
    return int(match.group(1)) if match else None


def describe(outcome: dict[str, Any] | None, retries: int = 0, followups: int = 0) -> str:
    """A short text: `merged after 2 human pushes, 1 approved, 1 retry, 2 follow-ups`, `open`, `closed`, or '-'."""
    runs = [f"{retries} retr{'y' if retries == 1 else 'ies'}"] if retries else []
    runs += [f"{followups} follow-up{'' if followups == 1 else 's'}"] if followups else []
    if not outcome:
        return ", ".join(runs) or "-"
    text = outcome["state"]
    if outcome["human_pushes"]:
        pushes = outcome["human_pushes"]
        text += f" after {pushes} human push{'es' if pushes > 1 else ''}"
    reviews = [f"{n} {kind.replace('_', ' ')}" for kind, n in outcome["reviews"].items() if n]
    return ", ".join([text, *reviews, *runs])


def retry_counts(jobs: list[Job], kinds: tuple[JobKind, ...] = (JobKind.RETRY,)) -> dict[tuple[str, int], int]:
    """How many jobs of `kinds` (by default retries) each (repo, issue) had, among `jobs`."""
    counts: dict[tuple[str, int], int] = {}
    for job in jobs:
        if job.kind in kinds:
            counts[(job.repo, job.issue)] = counts.get((job.repo, job.issue), 0) + 1
    return counts


FOLLOWUPS = (JobKind.CI, JobKind.REVIEW)
"""The jobs CI and reviews started on the App's PR, counted beside the retries a person asked for."""
