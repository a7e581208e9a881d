"""The ledger's SQL on PostgreSQL: the SQLite ledger's rules, written with RETURNING and row locks."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import psycopg

from bot.jobs import Job, JobRequest, JobStatus
from bot.ledger import SubmitResult
from bot.ledger_sqlite_ops import COLUMNS, row_to_job
from bot.webhooks.decision import InstallationChange

SCHEMA_LOCK = 0x6D696E6966  # pg_advisory_xact_lock key: processes starting together create the schema once
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, installation_id BIGINT NOT NULL, repo TEXT NOT NULL,
    issue INTEGER NOT NULL, requester TEXT NOT NULL, delivery_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,
    guidance TEXT NOT NULL DEFAULT '', comment_id BIGINT, attempts INTEGER NOT NULL DEFAULT 0,
    lease_expires_at DOUBLE PRECISION, worker_id TEXT, pr_url TEXT, run_id TEXT, error TEXT,
    created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL, extra TEXT NOT NULL DEFAULT '{}',
    seq BIGSERIAL)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_active_run ON jobs (repo, issue) "
    "WHERE status IN ('queued', 'running') AND kind IN ('fix', 'retry')",
    "CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, lease_expires_at)",
    """CREATE TABLE IF NOT EXISTS installations (
    id BIGINT PRIMARY KEY, account TEXT NOT NULL, suspended INTEGER NOT NULL DEFAULT 0,
    repositories TEXT NOT NULL DEFAULT '[]', updated_at DOUBLE PRECISION NOT NULL)""",
)
ACTIVE = "status IN ('queued', 'running')"
RUNS = "kind IN ('fix', 'retry')"  # control jobs (help, stop) never count as an issue's active job
RETURNING = ", ".join(f"jobs.{c.strip()}" for c in COLUMNS.split(","))
Conn = psycopg.Connection[Any]


def create_schema(conn: Conn, *more: str) -> None:
    """Create the tables once, even when several processes start at the same moment."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        for statement in (*SCHEMA, *more):
            conn.execute(statement)


def select_jobs(conn: Conn, where: str, params: tuple[Any, ...] = ()) -> list[Job]:
    return [row_to_job(r) for r in conn.execute(f"SELECT {COLUMNS} FROM jobs WHERE {where}", params)]


def one_job(conn: Conn, sql: str, params: tuple[Any, ...]) -> Job | None:
    """Run a statement that RETURNING one job row; None when it touched no row."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row_to_job(row)


def issue_of_pull(conn: Conn, repo: str, pull: int) -> int | None:
    """The issue whose job opened PR #pull, if the ledger knows it."""
    row = conn.execute(
        "SELECT issue FROM jobs WHERE repo = %s AND pr_url LIKE %s ORDER BY created_at DESC LIMIT 1",
        (repo, f"%/pull/{pull}"),
    ).fetchone()
    return None if row is None else int(row[0])


def stop_active(
    conn: Conn, where: str, params: tuple[Any, ...], reason: str, queued_to: JobStatus = JobStatus.CANCELLED
) -> tuple[list[Job], list[Job]]:
    """End the active jobs matching `where`: queued ones become `queued_to`, running ones cancelled."""
    rows = conn.execute(
        "UPDATE jobs SET status = CASE prev.status WHEN 'queued' THEN %s ELSE 'cancelled' END, "
        "error = %s, updated_at = %s "
        f"FROM (SELECT id, status FROM jobs WHERE {ACTIVE} AND {where} FOR UPDATE) AS prev "
        f"WHERE jobs.id = prev.id RETURNING prev.status, {RETURNING}",
        (queued_to.value, reason, time.time(), *params),
    ).fetchall()
    queued = [row_to_job(r[1:]) for r in rows if r[0] == JobStatus.QUEUED]
    running = [row_to_job(r[1:]) for r in rows if r[0] == JobStatus.RUNNING]
    return queued, running


def submit(conn: Conn, req: JobRequest) -> SubmitResult:
    existing = select_jobs(conn, "delivery_id = %s", (req.delivery_id,))
    if existing:
        return SubmitResult(existing[0], created=False)
    extra = dict(req.extra)
    issue = req.issue
    if extra.get("on_pull_request") and (found := issue_of_pull(conn, req.repo, req.issue)) is not None:
        issue, extra = found, {**extra, "on_pull_request": False, "pull_request": req.issue}
    superseded: list[Job] = []
    cancelled: list[Job] = []
    if not req.kind.is_control:
        reason = f"superseded by a {req.kind} job from @{req.requester}"
        superseded, cancelled = stop_active(
            conn, f"{RUNS} AND repo = %s AND issue = %s", (req.repo, issue), reason, JobStatus.SUPERSEDED
        )
    now = time.time()
    job = one_job(
        conn,
        f"INSERT INTO jobs ({COLUMNS}) VALUES "
        "(%s, %s, %s, %s, %s, %s, %s, 'queued', %s, %s, 0, NULL, NULL, NULL, NULL, NULL, %s, %s, %s) "
        f"ON CONFLICT (delivery_id) DO NOTHING RETURNING {RETURNING}",
        (uuid.uuid4().hex[:16], req.kind.value, req.installation_id, req.repo, issue, req.requester,
         req.delivery_id, req.guidance, req.comment_id, now, now, json.dumps(extra)),
    )  # fmt: skip
    if job is None:  # the same delivery, committed a moment ago by another API replica
        return SubmitResult(select_jobs(conn, "delivery_id = %s", (req.delivery_id,))[0], created=False)
    return SubmitResult(job, created=True, superseded=superseded, cancelled=cancelled)


def record_installation(conn: Conn, change: InstallationChange) -> list[Job]:
    """Upsert the installation (or delete it); stop its active jobs when it was deleted or suspended."""
    row = conn.execute(
        "SELECT repositories FROM installations WHERE id = %s FOR UPDATE", (change.installation_id,)
    ).fetchone()
    repos = (set(json.loads(row[0])) if row else set()) | set(change.repositories_added)
    suspended = {"suspend": 1, "unsuspend": 0}.get(change.action)
    conn.execute(
        "INSERT INTO installations (id, account, suspended, repositories, updated_at) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (id) DO UPDATE SET account = CASE WHEN excluded.account = '' THEN installations.account "
        "ELSE excluded.account END, suspended = COALESCE(%s::integer, installations.suspended), "
        "repositories = excluded.repositories, updated_at = excluded.updated_at",
        (change.installation_id, change.account, suspended or 0,
         json.dumps(sorted(repos - set(change.repositories_removed))), time.time(), suspended),
    )  # fmt: skip
    if change.action == "deleted":
        conn.execute("DELETE FROM installations WHERE id = %s", (change.installation_id,))
    if not change.stops_jobs:
        return []
    queued, running = stop_active(
        conn, "installation_id = %s", (change.installation_id,), f"installation {change.action}"
    )
    return queued + running


def cancel(conn: Conn, repo: str, issue: int, reason: str, on_pull_request: bool) -> list[Job]:
    if on_pull_request:
        issue = issue_of_pull(conn, repo, issue) or issue
    queued, running = stop_active(conn, f"{RUNS} AND repo = %s AND issue = %s", (repo, issue), reason)
    return queued + running


CLAIM = (
    "UPDATE jobs SET status = 'running', worker_id = %s, lease_expires_at = %s, attempts = attempts + 1, "
    "updated_at = %s WHERE id = %s AND (status = 'queued' OR (status = 'running' AND lease_expires_at < %s)) "
    f"RETURNING {RETURNING}"
)
RENEW = "UPDATE jobs SET lease_expires_at = %s WHERE id = %s AND worker_id = %s AND status = 'running'"
FINISH = (
    "UPDATE jobs SET status = CASE status WHEN 'running' THEN %s ELSE status END, "
    "pr_url = COALESCE(%s, pr_url), run_id = COALESCE(%s, run_id), error = COALESCE(%s, error), "
    "lease_expires_at = NULL, updated_at = %s WHERE id = %s AND worker_id = %s"
)
REQUEUE = (
    "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_expires_at = NULL, "
    "attempts = GREATEST(attempts - 1, 0), updated_at = %s WHERE id = %s AND worker_id = %s AND status = 'running'"
)
