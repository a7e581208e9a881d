"""The ledger's SQL: each write is a function of a connection, run by the group-commit writer in a batch."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from bot.jobs import Job, JobKind, JobRequest, JobStatus
from bot.ledger import SubmitResult
from bot.webhooks.decision import InstallationChange

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, installation_id BIGINT NOT NULL, repo TEXT NOT NULL,
    issue INTEGER NOT NULL, requester TEXT NOT NULL, delivery_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,
    guidance TEXT NOT NULL DEFAULT '', comment_id BIGINT, attempts INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL, worker_id TEXT, pr_url TEXT, run_id TEXT, error TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, extra TEXT NOT NULL DEFAULT '{}'
);
DROP INDEX IF EXISTS jobs_one_active;
CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_active_run ON jobs (repo, issue)
    WHERE status IN ('queued', 'running') AND kind IN ('fix', 'retry');
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, lease_expires_at);
CREATE TABLE IF NOT EXISTS installations (
    id BIGINT PRIMARY KEY, account TEXT NOT NULL, suspended INTEGER NOT NULL DEFAULT 0,
    repositories TEXT NOT NULL DEFAULT '[]', updated_at REAL NOT NULL
);
"""
COLUMNS = (
    "id, kind, installation_id, repo, issue, requester, delivery_id, status, guidance, comment_id, attempts, "
    "lease_expires_at, worker_id, pr_url, run_id, error, created_at, updated_at, extra"
)
ACTIVE = "status IN ('queued', 'running')"
RUNS = "kind IN ('fix', 'retry')"  # control jobs (help, stop) never count as an issue's active job
Conn = sqlite3.Connection


def when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def row_to_job(row: tuple[Any, ...]) -> Job:
    (id_, kind, inst, repo, issue, requester, delivery, status, guidance, comment_id, attempts,
     lease, worker, pr_url, run_id, error, created, updated, extra) = row  # fmt: skip
    return Job(
        id_, JobKind(kind), inst, repo, issue, requester, delivery, JobStatus(status), guidance, comment_id,
        attempts, when(lease), worker, pr_url, run_id, error, when(created), when(updated), json.loads(extra),
    )  # fmt: skip


def select_jobs(conn: Conn, where: str, params: tuple[Any, ...] = ()) -> list[Job]:
    return [row_to_job(r) for r in conn.execute(f"SELECT {COLUMNS} FROM jobs WHERE {where}", params)]


def issue_of_pull(conn: Conn, repo: str, pull: int) -> int | None:
    """The issue whose job opened PR #pull, if the ledger knows it."""
    row = conn.execute(
        "SELECT issue FROM jobs WHERE repo = ? AND pr_url LIKE ? ORDER BY created_at DESC LIMIT 1",
        (repo, f"%/pull/{pull}"),
    ).fetchone()
    return None if row is None else int(row[0])


def stop_active(
    conn: Conn, where: str, params: tuple[Any, ...], reason: str, queued_to: JobStatus = JobStatus.CANCELLED
) -> tuple[list[Job], list[Job]]:
    """End the active jobs matching `where`: queued ones become `queued_to`, running ones cancelled."""
    jobs = select_jobs(conn, f"{ACTIVE} AND {where}", params)
    if not jobs:
        return [], []
    conn.execute(
        f"UPDATE jobs SET status = CASE status WHEN 'queued' THEN ? ELSE 'cancelled' END, "
        f"error = ?, updated_at = ? WHERE {ACTIVE} AND {where}",
        (queued_to.value, reason, time.time(), *params),
    )
    queued = [replace(j, status=queued_to) for j in jobs if j.status == JobStatus.QUEUED]
    running = [replace(j, status=JobStatus.CANCELLED) for j in jobs if j.status == JobStatus.RUNNING]
    return queued, running


def submit(conn: Conn, req: JobRequest) -> SubmitResult:
    existing = select_jobs(conn, "delivery_id = ?", (req.delivery_id,))
    if existing:
        return SubmitResult(existing[0], created=False)
    if req.extra.get("on_pull_request") and (issue := issue_of_pull(conn, req.repo, req.issue)) is not None:
        req = replace(
            req, issue=issue, extra={**req.extra, "on_pull_request": False, "pull_request": req.issue}
        )
    superseded: list[Job] = []
    cancelled: list[Job] = []
    if not req.kind.is_control:
        reason = f"superseded by a {req.kind} job from @{req.requester}"
        superseded, cancelled = stop_active(
            conn, f"{RUNS} AND repo = ? AND issue = ?", (req.repo, req.issue), reason, JobStatus.SUPERSEDED
        )
    now = time.time()
    job_id = uuid.uuid4().hex[:16]
    conn.execute(
        f"INSERT INTO jobs ({COLUMNS}) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, 0, NULL, NULL, NULL, NULL, NULL, ?, ?, ?)",
        (job_id, req.kind.value, req.installation_id, req.repo, req.issue, req.requester, req.delivery_id,
         req.guidance, req.comment_id, now, now, json.dumps(req.extra)),
    )  # fmt: skip
    job = Job(
        job_id, req.kind, req.installation_id, req.repo, req.issue, req.requester, req.delivery_id,
        guidance=req.guidance, comment_id=req.comment_id, created_at=when(now), updated_at=when(now),
        extra=dict(req.extra),
    )  # fmt: skip
    return SubmitResult(job, created=True, superseded=superseded, cancelled=cancelled)


def record_installation(conn: Conn, change: InstallationChange) -> list[Job]:
    row = conn.execute(
        "SELECT repositories FROM installations WHERE id = ?", (change.installation_id,)
    ).fetchone()
    repos = set(json.loads(row[0])) if row else set()
    repos = (repos | set(change.repositories_added)) - set(change.repositories_removed)
    suspended = {"suspend": 1, "unsuspend": 0}.get(change.action)
    conn.execute(
        "INSERT INTO installations (id, account, suspended, repositories, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET account = CASE WHEN excluded.account = '' THEN installations.account "
        "ELSE excluded.account END, suspended = COALESCE(?, installations.suspended), "
        "repositories = excluded.repositories, updated_at = excluded.updated_at",
        (
            change.installation_id,
            change.account,
            suspended or 0,
            json.dumps(sorted(repos)),
            time.time(),
            suspended,
        ),
    )
    if change.action == "deleted":
        conn.execute("DELETE FROM installations WHERE id = ?", (change.installation_id,))
    if not change.stops_jobs:
        return []
    queued, running = stop_active(
        conn, "installation_id = ?", (change.installation_id,), f"installation {change.action}"
    )
    return queued + running


def cancel(conn: Conn, repo: str, issue: int, reason: str, on_pull_request: bool) -> list[Job]:
    if on_pull_request:
        issue = issue_of_pull(conn, repo, issue) or issue
    queued, running = stop_active(conn, f"{RUNS} AND repo = ? AND issue = ?", (repo, issue), reason)
    return queued + running


def claim(conn: Conn, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
    now = time.time()
    claimed = conn.execute(
        "UPDATE jobs SET status = 'running', worker_id = ?, lease_expires_at = ?, attempts = attempts + 1, "
        "updated_at = ? WHERE id = ? "
        "AND (status = 'queued' OR (status = 'running' AND lease_expires_at < ?))",
        (worker_id, now + lease_seconds, now, job_id, now),
    ).rowcount
    return select_jobs(conn, "id = ?", (job_id,))[0] if claimed else None


def held(sql: str, *params: Any) -> Any:
    """An op running one UPDATE on a job this worker holds; True when it changed the row."""
    return lambda conn: conn.execute(sql, params).rowcount == 1
