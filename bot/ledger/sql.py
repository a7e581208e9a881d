"""The ledger's SQL shared by SQLite and PostgreSQL, written once with `?` placeholders; a Dialect says what differs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from bot.forge_ids import iid_of, is_mr
from bot.jobs import InstallationChange, Job, JobDetails, JobKind, JobRequest, JobStatus

COLUMNS = (
    "id, kind, installation_id, repo, issue, requester, delivery_id, status, guidance, comment_id, attempts, "
    "lease_expires_at, worker_id, pr_url, run_id, error, created_at, updated_at, extra"
)
INSERT_COLUMNS = f"{COLUMNS}, body_sha256"  # the body's digest is written, never read back into a Job
BODY_COLUMN = "body_sha256 TEXT"  # added to ledgers created before it (NULL: a job no webhook body asked for)
BODY_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_body ON jobs (body_sha256)"  # NULLs never clash
STARTED_INDEX = "CREATE INDEX IF NOT EXISTS jobs_started ON jobs (started_at)"  # fair share's recent window
ACTIVE = "status IN ('queued', 'running')"
LIVE = "status IN ('queued', 'running', 'waiting')"  # what a cancel ends: the active run and the asks waiting for it
RUNS = "kind IN ('fix', 'retry', 'ci', 'review')"  # control jobs (help, stop) never count as an issue's active job
RENEW = "UPDATE jobs SET lease_expires_at = ? WHERE id = ? AND worker_id = ? AND status = 'running'"
FINISH = (
    "UPDATE jobs SET status = CASE status WHEN 'running' THEN ? ELSE status END, "
    "pr_url = COALESCE(?, pr_url), run_id = COALESCE(?, run_id), error = COALESCE(?, error), "
    "lease_expires_at = NULL, updated_at = ? WHERE id = ? AND worker_id = ?"
)
REQUEUE = (
    "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_expires_at = NULL, "
    "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = ? "
    "WHERE id = ? AND worker_id = ? AND status = 'running'"
)
# A queued row's lease_expires_at is when it may run again (NULL: now); the deferred claim stays spent, except
# where nothing of the run started (a quota wait): DEFER_UNSPENT gives it back in the same UPDATE.
_DEFER = (
    "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_expires_at = ?, error = ?, {claims}updated_at = ? "
    "WHERE id = ? AND worker_id = ? AND status = 'running'"
)
DEFER = _DEFER.format(claims="")
DEFER_UNSPENT = _DEFER.format(claims="attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, ")
DUE = "(lease_expires_at IS NULL OR lease_expires_at <= ?)"
UPSERT_INSTALLATION = (
    "INSERT INTO installations (id, account, suspended, repositories, updated_at) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET account = CASE WHEN excluded.account = '' THEN installations.account "
    "ELSE excluded.account END, suspended = COALESCE(CAST(? AS INTEGER), installations.suspended), "
    "repositories = excluded.repositories, updated_at = excluded.updated_at"
)
Stopped = tuple[list[Job], list[Job]]
StopActive = Callable[[Any, str, tuple[Any, ...], str, JobStatus], Stopped]


@dataclass(frozen=True)
class Dialect:
    """What differs between the two databases' SQL."""

    param: str  # the driver's placeholder
    lock: str  # row lock for a read-then-write ("" where the transaction already holds the write lock)
    tiebreak: str  # the column that orders rows created in the same instant
    stop_active: StopActive  # end the active jobs matching a WHERE clause
    ran_extra: str  # `extra` (a JSON object's text) with "ran": true set, the other keys kept

    def mark_ran(self) -> str:
        """The UPDATE that records, on a running job this worker holds, that its run started (`JobDetails.ran`)."""
        return f"UPDATE jobs SET extra = {self.ran_extra} WHERE id = ? AND worker_id = ? AND status = 'running'"

    def sql(self, text: str) -> str:
        """`text` with its `?` placeholders in this driver's style."""
        return text if self.param == "?" else text.replace("?", self.param)


def when(epoch: float | None) -> datetime | None:
    """A stored epoch as an aware datetime."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def row_to_job(row: tuple[Any, ...]) -> Job:
    """A Job from a row of COLUMNS."""
    (id_, kind, inst, repo, issue, requester, delivery, status, guidance, comment_id, attempts,
     lease, worker, pr_url, run_id, error, created, updated, extra) = row  # fmt: skip
    return Job(
        id_, JobKind(kind), inst, repo, issue, requester, delivery, JobStatus(status), guidance, comment_id,
        attempts, when(lease), worker, pr_url, run_id, error, when(created), when(updated), JobDetails.from_json(extra),
    )  # fmt: skip


def pr_url_pattern(pull: int) -> str:
    """The LIKE pattern of the url of PR `pull`: `/pull/N` on GitHub; on GitLab a merge request goes by its iid
    lifted above every issue's (bot/forge_ids.py) and its url ends `/-/merge_requests/<iid>`."""
    return f"%/merge_requests/{iid_of(pull)}" if is_mr(pull) else f"%/pull/{pull}"


def select_jobs(d: Dialect, conn: Any, where: str, params: tuple[Any, ...] = ()) -> list[Job]:
    """The jobs matching `where`."""
    return [row_to_job(r) for r in conn.execute(d.sql(f"SELECT {COLUMNS} FROM jobs WHERE {where}"), params)]


def issue_of_pull(d: Dialect, conn: Any, repo: str, pull: int) -> int | None:
    """The issue whose job opened PR #pull, if the ledger knows it."""
    row = conn.execute(
        d.sql("SELECT issue FROM jobs WHERE repo = ? AND pr_url LIKE ? ORDER BY created_at DESC LIMIT 1"),
        (repo, pr_url_pattern(pull)),
    ).fetchone()
    return None if row is None else int(row[0])


def on_issue(d: Dialect, conn: Any, req: JobRequest) -> JobRequest:
    """A request made on a PR moved to the issue whose job opened that PR (unchanged when unknown)."""
    if not req.details.on_pull_request or (issue := issue_of_pull(d, conn, req.repo, req.issue)) is None:
        return req
    return replace(req, issue=issue, details=replace(req.details, on_pull_request=False, pull_request=req.issue))


def take_over(d: Dialect, conn: Any, job_id: str) -> Stopped | None:
    """A writer's waiting `/agent retry` takes the issue over: its running run cancelled, a queued one back to
    waiting (folded into the retry's run), the retry queued. None when the retry is no longer waiting."""
    found = select_jobs(d, conn, "id = ? AND status = 'waiting'", (job_id,))
    if not found:
        return None
    retry = found[0]
    reason = f"superseded by /agent retry from @{retry.requester}"
    where = f"status = 'running' AND {RUNS} AND repo = ? AND issue = ?"
    _, running = d.stop_active(conn, where, (retry.repo, retry.issue), reason, JobStatus.CANCELLED)
    queued = select_jobs(d, conn, f"status = 'queued' AND {RUNS} AND repo = ? AND issue = ?", (retry.repo, retry.issue))
    conn.execute(
        d.sql(f"UPDATE jobs SET status = 'waiting', updated_at = ? WHERE status = 'queued' AND {RUNS} "
              "AND repo = ? AND issue = ?"),
        (time.time(), retry.repo, retry.issue),
    )  # fmt: skip
    conn.execute(d.sql("UPDATE jobs SET status = 'queued', updated_at = ? WHERE id = ?"), (time.time(), job_id))
    return queued, running


def waiting_asks(d: Dialect, conn: Any, repo: str, issue: int) -> list[Job]:
    """The issue's asks waiting for its next run, oldest first."""
    where = f"status = 'waiting' AND repo = ? AND issue = ? ORDER BY created_at, {d.tiebreak}"
    return select_jobs(d, conn, where, (repo, issue))


def settle_ask(d: Dialect, conn: Any, job_id: str, status: JobStatus, error: str) -> bool:
    """End a waiting ask (folded into a run, denied, cancelled); False when it no longer waits."""
    changed = conn.execute(
        d.sql("UPDATE jobs SET status = ?, error = ?, updated_at = ? WHERE id = ? AND status = 'waiting'"),
        (status.value, error, time.time(), job_id),
    ).rowcount
    return bool(changed == 1)


def promote(d: Dialect, conn: Any, repo: str, issue: int) -> Job | None:
    """The issue's oldest waiting ask made its queued run, when the issue has no active run; else None."""
    if select_jobs(d, conn, f"{ACTIVE} AND {RUNS} AND repo = ? AND issue = ?", (repo, issue)):
        return None
    oldest = waiting_asks(d, conn, repo, issue)[:1]
    if not oldest:
        return None
    conn.execute(
        d.sql("UPDATE jobs SET status = 'queued', updated_at = ? WHERE id = ? AND status = 'waiting'"),
        (time.time(), oldest[0].id),
    )
    return replace(oldest[0], status=JobStatus.QUEUED)


def promote_idle(d: Dialect, conn: Any) -> list[Job]:
    """`promote` on every issue with waiting asks and no active run (a worker died between a finish and its
    promote, or a cancelled run's worker never came back)."""
    rows = conn.execute(
        d.sql(
            "SELECT DISTINCT w.repo, w.issue FROM jobs w WHERE w.status = 'waiting' AND NOT EXISTS "
            "(SELECT 1 FROM jobs a WHERE a.repo = w.repo AND a.issue = w.issue "
            "AND a.status IN ('queued', 'running') AND a.kind IN ('fix', 'retry', 'ci', 'review'))"
        ),
        (),
    ).fetchall()
    return [job for repo, issue in rows if (job := promote(d, conn, repo, issue)) is not None]


def cancel(d: Dialect, conn: Any, repo: str, issue: int, reason: str, on_pull_request: bool) -> list[Job]:
    """Cancel the issue's (or the PR's issue's) active run; returns the jobs stopped."""
    if on_pull_request:
        issue = issue_of_pull(d, conn, repo, issue) or issue
    queued, running = d.stop_active(
        conn, f"{RUNS} AND repo = ? AND issue = ?", (repo, issue), reason, JobStatus.CANCELLED
    )
    return queued + running  # the waiting asks too: a stop or a close ends everything asked of the issue


def record_installation(d: Dialect, conn: Any, change: InstallationChange) -> list[Job]:
    """Upsert the installation (or delete it); stop its active jobs when it was deleted or suspended."""
    select = d.sql(f"SELECT repositories FROM installations WHERE id = ?{d.lock}")
    row = conn.execute(select, (change.installation_id,)).fetchone()
    repos = (set(json.loads(row[0])) if row else set()) | set(change.repositories_added)
    suspended = {"suspend": 1, "unsuspend": 0}.get(change.action)
    conn.execute(
        d.sql(UPSERT_INSTALLATION),
        (change.installation_id, change.account, suspended or 0,
         json.dumps(sorted(repos - set(change.repositories_removed))), time.time(), suspended),
    )  # fmt: skip
    if change.action == "deleted":
        conn.execute(d.sql("DELETE FROM installations WHERE id = ?"), (change.installation_id,))
    if not change.stops_jobs:
        return []
    reason = f"installation {change.action}"
    queued, running = d.stop_active(conn, "installation_id = ?", (change.installation_id,), reason, JobStatus.CANCELLED)
    return queued + running


ORG_WIDE = "{owner}/*"
"""The repo_labels key of an owner's label (from its `.github` repository)."""


def trigger_label(d: Dialect, conn: Any, repo: str) -> str | None:
    """The label a repository's config named when a worker last read it, else its owner's, else None."""
    org_key = ORG_WIDE.format(owner=repo.split("/", 1)[0])
    row = conn.execute(
        d.sql("SELECT label FROM repo_labels WHERE repo IN (?, ?) ORDER BY repo = ? DESC LIMIT 1"),
        (repo, org_key, repo),
    ).fetchone()
    return None if row is None else str(row[0])
