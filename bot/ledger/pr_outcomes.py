"""What happened to the pull requests mini-fix opened: merged, closed, human pushes, review verdicts.

One row per (repository, PR) in the ledger's database, written by the webhook path (an upsert per event) and
read by `mini-fix jobs`, /runs, the metrics and `mini-fix export`. The SQL here runs on SQLite and PostgreSQL.

A review's verdict counts only when its author may write to the repository, which only GitHub can say: the webhook
path (which asks GitHub nothing) keeps each review as an unchecked row of `pr_reviews`, one per review id, and a
worker chore (`bot/worker/review_checks.py`) asks for the reviewer's permission and settles it; a writer's verdict then
moves the PR's counter, in the same transaction as the settling, so two workers never count one review twice.
"""

from __future__ import annotations

import re
import time
from typing import Any

from bot.forge_ids import forge_key, mr_number, repo_of_key
from bot.jobs import REVIEW_STATES, Job, JobKind, PrEvent
from bot.ledger.sql import FORGE, forge_of, pr_url_pattern

REVIEW_COLUMNS = {state: state for state in REVIEW_STATES}  # each verdict's counter column
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS pr_outcomes (repo TEXT NOT NULL, pull INTEGER NOT NULL, "
    "state TEXT NOT NULL DEFAULT 'open', merged INTEGER NOT NULL DEFAULT 0, human_pushes INTEGER NOT NULL DEFAULT 0, "
    "approved INTEGER NOT NULL DEFAULT 0, changes_requested INTEGER NOT NULL DEFAULT 0, "
    "commented INTEGER NOT NULL DEFAULT 0, updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (repo, pull))"
)
REVIEWS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS pr_reviews (repo TEXT NOT NULL, review_id BIGINT NOT NULL, pull INTEGER NOT NULL, "
    "installation_id BIGINT NOT NULL, reviewer TEXT NOT NULL, state TEXT NOT NULL, "
    "created_at DOUBLE PRECISION NOT NULL, permission TEXT, counted INTEGER, PRIMARY KEY (repo, review_id))"
)
REVIEWS_INDEX = "CREATE INDEX IF NOT EXISTS pr_reviews_unchecked ON pr_reviews (created_at) WHERE counted IS NULL"
SCHEMAS = (SCHEMA, REVIEWS_SCHEMA, REVIEWS_INDEX)
_INSERT = "INSERT INTO pr_outcomes (repo, pull, state, merged, updated_at) VALUES (?, ?, ?, ?, ?) "
_SET_STATE = "ON CONFLICT (repo, pull) DO UPDATE SET state = excluded.state, merged = excluded.merged, "
_PULL_URL = re.compile(r"/(pull|merge_requests)/(\d+)/?$")
COLUMNS = "repo, pull, state, merged, human_pushes, approved, changes_requested, commented"


# Only a PR the App opened for a job: the ledger holds a job of that repository, on that forge, whose PR (or MR) url
# ends in its number. A PR's row needs no forge in its key: a merge request's number is above every GitHub PR's.
_OURS = f"SELECT 1 FROM jobs WHERE repo = ? AND {FORGE} AND pr_url LIKE ? LIMIT 1"


def is_ours(conn: Any, param: str, repo: str, pull: int, installation_id: int) -> bool:
    """Whether the ledger recorded PR `pull` of `repo`, on the forge of `installation_id`, for one of its jobs."""
    params = (repo, forge_of(installation_id), pr_url_pattern(pull))
    return conn.execute(_OURS.replace("?", param), params).fetchone() is not None


def record(conn: Any, param: str, event: PrEvent) -> bool:
    """Upsert the PR's row for one event (`param` is the driver's placeholder), or keep a review to be checked;
    False (nothing written) when the PR is not one the ledger recorded for a job, or a review has no id."""
    if not is_ours(conn, param, event.repo, event.pull, event.installation_id):
        return False
    now = time.time()
    if event.kind == "review":
        return _keep_review(conn, param, event, now)
    if event.kind in ("closed", "reopened"):
        state = "closed" if event.kind == "closed" else "open"
        merged = int(event.kind == "closed" and event.merged)
        text = _INSERT + _SET_STATE + "updated_at = excluded.updated_at"
        conn.execute(text.replace("?", param), (event.repo, event.pull, state, merged, now))
    else:
        _add_one(conn, param, event.repo, event.pull, "human_pushes", now)
    return True


def _add_one(conn: Any, param: str, repo: str, pull: int, column: str, now: float) -> None:
    text = (
        f"INSERT INTO pr_outcomes (repo, pull, {column}, updated_at) VALUES (?, ?, 1, ?) "
        f"ON CONFLICT (repo, pull) DO UPDATE SET {column} = pr_outcomes.{column} + 1, updated_at = excluded.updated_at"
    )
    conn.execute(text.replace("?", param), (repo, pull, now))


def _keep_review(conn: Any, param: str, event: PrEvent, now: float) -> bool:
    if event.review_id is None or event.review not in REVIEW_COLUMNS:
        return False
    text = (
        "INSERT INTO pr_reviews (repo, review_id, pull, installation_id, reviewer, state, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (repo, review_id) DO NOTHING"  # a redelivery: already kept
    )
    # A review id is unique on its forge only: the row's repository is its `forge_key`.
    key = forge_key(event.repo, event.installation_id)
    params = (key, event.review_id, event.pull, event.installation_id, event.by, event.review, now)
    conn.execute(text.replace("?", param), params)
    return True


def unchecked_reviews(conn: Any, param: str, limit: int) -> list[PrEvent]:
    """The oldest reviews whose author's permission nobody asked GitHub for yet."""
    text = (
        "SELECT installation_id, repo, pull, reviewer, state, review_id FROM pr_reviews WHERE counted IS NULL "
        "ORDER BY created_at, review_id LIMIT ?"
    )
    rows = conn.execute(text.replace("?", param), (limit,)).fetchall()
    return [
        PrEvent(int(r[0]), repo_of_key(r[1]), int(r[2]), "review", r[3], review=r[4], review_id=int(r[5])) for r in rows
    ]


def settle_review(conn: Any, param: str, review: PrEvent, permission: str, counts: bool) -> bool:
    """Record what GitHub said of the reviewer (`permission`, "" when asking failed) and, when `counts`, add the
    verdict to the PR's counters; False when the review was settled already (by another worker) or is unknown."""
    text = "UPDATE pr_reviews SET permission = ?, counted = ? WHERE repo = ? AND review_id = ? AND counted IS NULL"
    key = forge_key(review.repo, review.installation_id)
    settled = conn.execute(text.replace("?", param), (permission, int(counts), key, review.review_id))
    if settled.rowcount != 1:
        return False
    if counts:
        _add_one(conn, param, review.repo, review.pull, REVIEW_COLUMNS[review.review], time.time())
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
    """The PR number in a PR url (a GitLab merge request's as bot/forge_ids.py numbers it), or None."""
    match = _PULL_URL.search(pr_url or "")
    if match is None:
        return None
    number = int(match.group(2))
    return mr_number(number) if match.group(1) == "merge_requests" else number


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


def issue_key(job: Job) -> tuple[str, int]:
    """The key a job's issue goes by in `retry_counts`: (`forge_key`, number), so GitHub `acme/app#3` and a GitLab
    project `acme/app`'s issue #3 are counted apart (a GitHub key stays the plain `owner/name`)."""
    return forge_key(job.repo, job.installation_id), job.issue


def retry_counts(jobs: list[Job], kinds: tuple[JobKind, ...] = (JobKind.RETRY,)) -> dict[tuple[str, int], int]:
    """How many jobs of `kinds` (by default retries) each issue had, among `jobs`, by `issue_key`."""
    counts: dict[tuple[str, int], int] = {}
    for job in jobs:
        if job.kind in kinds:
            counts[issue_key(job)] = counts.get(issue_key(job), 0) + 1
    return counts


FOLLOWUPS = (JobKind.CI, JobKind.REVIEW)
"""The jobs CI and reviews started on the App's PR, counted beside the retries a person asked for."""
