"""The ledger's SQL on SQLite: each write is a function of a connection, run by the group-commit writer in a batch."""

from __future__ import annotations

import secrets
import sqlite3
import time
from dataclasses import replace
from typing import Any

from bot.jobs import Job, JobRequest, JobStatus
from bot.ledger import sql
from bot.ledger.contract import SubmitResult
from bot.ledger.sql import INSERT_COLUMNS, LIVE, Dialect, Stopped, on_issue, select_jobs, when

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, installation_id BIGINT NOT NULL, repo TEXT NOT NULL,
    issue INTEGER NOT NULL, requester TEXT NOT NULL, delivery_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,
    guidance TEXT NOT NULL DEFAULT '', comment_id BIGINT, attempts INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL, worker_id TEXT, pr_url TEXT, run_id TEXT, error TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, extra TEXT NOT NULL DEFAULT '{}', body_sha256 TEXT
);
DROP INDEX IF EXISTS jobs_one_active;
DROP INDEX IF EXISTS jobs_one_active_run;
DROP INDEX IF EXISTS jobs_one_active_job;
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, lease_expires_at);
CREATE TABLE IF NOT EXISTS installations (
    id BIGINT PRIMARY KEY, account TEXT NOT NULL, suspended INTEGER NOT NULL DEFAULT 0,
    repositories TEXT NOT NULL DEFAULT '[]', updated_at REAL NOT NULL
);
"""
# No conflict target: a clash on the delivery id, the body, the one-active-run index or the id inserts nothing.
INSERT = (
    f"INSERT INTO jobs ({INSERT_COLUMNS}) VALUES "
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, NULL, NULL, NULL, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
CLAIM = (
    "UPDATE jobs SET status = 'running', worker_id = ?, lease_expires_at = ?, attempts = attempts + 1, "
    "updated_at = ?, started_at = ? WHERE id = ? AND ((status = 'queued' AND (lease_expires_at IS NULL "
    "OR lease_expires_at <= ?)) OR (status = 'running' AND lease_expires_at < ?))"
)
Conn = sqlite3.Connection


def migrate(conn: Conn) -> None:
    """Bring a ledger file created by an earlier version up to SCHEMA (the body digest and start columns, indexes)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
    if "body_sha256" not in columns:
        conn.execute(f"ALTER TABLE jobs ADD COLUMN {sql.BODY_COLUMN}")
    if "started_at" not in columns:
        conn.execute("ALTER TABLE jobs ADD COLUMN started_at REAL")
    conn.execute(sql.BODY_INDEX)
    conn.execute(sql.STARTED_INDEX)
    conn.execute(sql.ONE_ACTIVE_INDEX)


def stop_active(conn: Conn, where: str, params: tuple[Any, ...], reason: str, queued_to: JobStatus) -> Stopped:
    """End the live jobs matching `where`: queued and waiting ones become `queued_to`, running ones cancelled."""
    jobs = select_jobs(SQLITE, conn, f"{LIVE} AND {where}", params)
    if not jobs:
        return [], []
    conn.execute(
        f"UPDATE jobs SET status = CASE status WHEN 'running' THEN 'cancelled' ELSE ? END, "
        f"error = ?, updated_at = ? WHERE {LIVE} AND {where}",
        (queued_to.value, reason, time.time(), *params),
    )
    queued = [replace(j, status=queued_to) for j in jobs if j.status != JobStatus.RUNNING]
    running = [replace(j, status=JobStatus.CANCELLED) for j in jobs if j.status == JobStatus.RUNNING]
    return queued, running


SQLITE = Dialect(
    param="?", lock="", tiebreak="rowid", stop_active=stop_active, ran_extra="json_set(extra, '$.ran', json('true'))"
)


def submit(conn: Conn, req: JobRequest) -> SubmitResult:
    """Record a job: a new delivery on an issue without an active run is one INSERT; the rest take the long way."""
    return submit_first(conn, req) or submit_long(conn, req)


def submit_first(conn: Conn, req: JobRequest) -> SubmitResult | None:
    """The one-INSERT case of `submit` (atomic by itself); None when it wrote nothing and the long way is needed."""
    if not req.details.on_pull_request and (job := insert(conn, req)) is not None:
        return SubmitResult(job, created=True)
    return None


def submit_long(conn: Conn, req: JobRequest) -> SubmitResult:
    """`submit` when the INSERT alone did not do: a redelivery, a pull request's retry, an issue's active run."""
    existing = select_jobs(SQLITE, conn, "delivery_id = ?", (req.delivery_id,))
    if existing:
        return SubmitResult(existing[0], created=False)
    if req.body_digest and (same := select_jobs(SQLITE, conn, "body_sha256 = ?", (req.body_digest,))):
        return SubmitResult(same[0], created=False, replayed=True)
    req = on_issue(SQLITE, conn, req)
    # An issue with an active run: the ask waits for it (never cancels it here: nobody's permission is known yet).
    job = insert(conn, req) or insert(conn, req, JobStatus.WAITING)
    if job is None:
        raise sqlite3.IntegrityError(f"job for delivery {req.delivery_id} clashes with another row")
    return SubmitResult(job, created=True)


def insert(conn: Conn, req: JobRequest, status: JobStatus = JobStatus.QUEUED) -> Job | None:
    """Insert the request's job; None when a unique index refused it (its delivery, or an active run)."""
    now = time.time()
    job_id = new_job_id()
    inserted = conn.execute(
        INSERT,
        (job_id, req.kind.value, req.installation_id, req.repo, req.issue, req.requester, req.delivery_id,
         status.value, req.guidance, req.comment_id, now, now, req.details.to_json(), req.body_digest or None),
    ).rowcount  # fmt: skip
    if not inserted:
        return None
    return Job(
        job_id, req.kind, req.installation_id, req.repo, req.issue, req.requester, req.delivery_id, status,
        guidance=req.guidance, comment_id=req.comment_id, created_at=when(now), updated_at=when(now),
        details=req.details,
    )  # fmt: skip


def new_job_id() -> str:
    """16 hex digits: the millisecond (11), then 20 random bits. In time order, each new row's primary-key entry
    lands on the index's last page, not a random one: a third fewer pages written per group commit. Two ids alike
    (odds 2^-20 for two rows of one millisecond) make the INSERT write nothing, and `submit` takes the long way,
    whose INSERT draws another id."""
    return f"{time.time_ns() // 1_000_000:011x}{secrets.randbits(20):05x}"


def claim(conn: Conn, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
    """Take a queued job, or a running one whose lease expired; None when it is not claimable."""
    now = time.time()
    claimed = conn.execute(CLAIM, (worker_id, now + lease_seconds, now, now, job_id, now, now)).rowcount
    return select_jobs(SQLITE, conn, "id = ?", (job_id,))[0] if claimed else None


def held(sql: str, *params: Any) -> Any:
    """An op running one UPDATE on a job this worker holds; True when it changed the row."""
    return lambda conn: conn.execute(sql, params).rowcount == 1
