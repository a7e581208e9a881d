"""The ledger's SQL on PostgreSQL: the shared rules of bot/ledger_sql.py, with RETURNING and row locks."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import psycopg

from bot.jobs import Job, JobRequest, JobStatus
from bot.ledger import sql
from bot.ledger.contract import SubmitResult
from bot.ledger.sql import (
    COLUMNS,
    INSERT_COLUMNS,
    LIVE,
    Dialect,
    Stopped,
    on_issue,
    row_to_job,
    select_jobs,
)

SCHEMA_LOCK = 0x6D696E6966  # pg_advisory_xact_lock key: processes starting together create the schema once
CLAIM_LOCK = 0x6D696E6967  # held while a worker chooses and claims its next run (fair share, running cap)
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, installation_id BIGINT NOT NULL, repo TEXT NOT NULL,
    issue INTEGER NOT NULL, requester TEXT NOT NULL, delivery_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,
    guidance TEXT NOT NULL DEFAULT '', comment_id BIGINT, attempts INTEGER NOT NULL DEFAULT 0,
    lease_expires_at DOUBLE PRECISION, worker_id TEXT, pr_url TEXT, run_id TEXT, error TEXT,
    created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL, extra TEXT NOT NULL DEFAULT '{}',
    seq BIGSERIAL)""",
    "DROP INDEX IF EXISTS jobs_one_active_run",  # fix and retry only: ledgers from before the follow-ups
    sql.ONE_ACTIVE_INDEX,  # per issue of each forge; the one before it keyed (repo, issue) alone
    "DROP INDEX IF EXISTS jobs_one_active_job",
    "CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, lease_expires_at)",
    f"ALTER TABLE jobs ADD COLUMN IF NOT EXISTS {sql.BODY_COLUMN}",
    sql.BODY_INDEX,
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS started_at DOUBLE PRECISION",  # when its latest claim began
    sql.STARTED_INDEX,
    """CREATE TABLE IF NOT EXISTS installations (
    id BIGINT PRIMARY KEY, account TEXT NOT NULL, suspended INTEGER NOT NULL DEFAULT 0,
    repositories TEXT NOT NULL DEFAULT '[]', updated_at DOUBLE PRECISION NOT NULL)""",
)
RETURNING = ", ".join(f"jobs.{c.strip()}" for c in COLUMNS.split(","))
# No conflict target: another replica's row for the same delivery or the same body inserts nothing (no error).
INSERT = (
    f"INSERT INTO jobs ({INSERT_COLUMNS}) VALUES "
    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 0, NULL, NULL, NULL, NULL, NULL, %s, %s, %s, %s) "
    f"ON CONFLICT DO NOTHING RETURNING {RETURNING}"
)
CLAIM = (
    "UPDATE jobs SET status = 'running', worker_id = %s, lease_expires_at = %s, attempts = attempts + 1, "
    "updated_at = %s, started_at = %s WHERE id = %s AND ((status = 'queued' AND (lease_expires_at IS NULL "
    "OR lease_expires_at <= %s)) OR (status = 'running' AND lease_expires_at < %s)) "
    f"RETURNING {RETURNING}"
)
Conn = psycopg.Connection[Any]


def create_schema(conn: Conn, *more: str) -> None:
    """Create the tables once, even when several processes start at the same moment. A statement whose object is
    already there is not run: `ALTER TABLE … IF NOT EXISTS` still takes the table's exclusive lock, and a process
    starting while workers claim and write would queue that lock between their statements (a deadlock)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        for statement in (*SCHEMA, *more):
            if _needed(conn, statement):
                conn.execute(statement)


_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)", re.I)
_OBJECT = re.compile(r"(?:CREATE (?:UNIQUE )?INDEX|CREATE TABLE) IF NOT EXISTS (\w+)", re.I)
_DROPPED = re.compile(r"DROP INDEX IF EXISTS (\w+)", re.I)


def _needed(conn: Conn, statement: str) -> bool:
    """False when the statement would change nothing (its column, table or index exists, or is gone)."""
    if match := _COLUMN.match(statement):
        found = conn.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = %s AND column_name = %s",
            (match[1].lower(), match[2].lower()),
        ).fetchone()
        return found is None
    if match := _OBJECT.match(statement):
        return _exists(conn, match[1]) is False
    if match := _DROPPED.match(statement):
        return _exists(conn, match[1]) is True
    return True


def _exists(conn: Conn, name: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    return bool(row and row[0])


def one_job(conn: Conn, sql: str, params: tuple[Any, ...]) -> Job | None:
    """Run a statement RETURNING one job row; None when it touched no row."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row_to_job(row)


def stop_active(conn: Conn, where: str, params: tuple[Any, ...], reason: str, queued_to: JobStatus) -> Stopped:
    """End the live jobs matching `where`: queued and waiting ones become `queued_to`, running ones cancelled."""
    rows = conn.execute(
        POSTGRES.sql(
            "UPDATE jobs SET status = CASE prev.status WHEN 'running' THEN 'cancelled' ELSE ? END, "
            "error = ?, updated_at = ? "
            f"FROM (SELECT id, status FROM jobs WHERE {LIVE} AND {where} FOR UPDATE) AS prev "
            f"WHERE jobs.id = prev.id RETURNING prev.status, {RETURNING}"
        ),
        (queued_to.value, reason, time.time(), *params),
    ).fetchall()
    queued = [row_to_job(r[1:]) for r in rows if r[0] != JobStatus.RUNNING]
    running = [row_to_job(r[1:]) for r in rows if r[0] == JobStatus.RUNNING]
    return queued, running


POSTGRES = Dialect(
    param="%s",
    lock=" FOR UPDATE",
    tiebreak="seq",
    stop_active=stop_active,
    ran_extra="""(extra::jsonb || '{"ran": true}'::jsonb)::text""",
)


def submit(conn: Conn, req: JobRequest) -> SubmitResult:
    """Record a job (or find it, for a redelivery or a replayed body), superseding the issue's active run."""
    if (found := recorded(conn, req)) is not None:
        return found
    req = on_issue(POSTGRES, conn, req)
    # An issue with an active run: the ask waits for it (never cancels it here: nobody's permission is known yet).
    job = insert(conn, req, JobStatus.QUEUED)
    if job is None and (found := recorded(conn, req)) is not None:  # the same delivery or body, another replica's
        return found
    job = job or insert(conn, req, JobStatus.WAITING)
    if job is None:
        if (found := recorded(conn, req)) is not None:
            return found
        raise psycopg.errors.UniqueViolation(f"job for delivery {req.delivery_id} clashes with another row")
    return SubmitResult(job, created=True)


def insert(conn: Conn, req: JobRequest, status: JobStatus) -> Job | None:
    """Insert the request's job; None when a unique index refused it (its delivery or body, or an active run)."""
    now = time.time()
    return one_job(
        conn,
        INSERT,
        (uuid.uuid4().hex[:16], req.kind.value, req.installation_id, req.repo, req.issue, req.requester,
         req.delivery_id, status.value, req.guidance, req.comment_id, now, now, req.details.to_json(),
         req.body_digest or None),
    )  # fmt: skip


def recorded(conn: Conn, req: JobRequest) -> SubmitResult | None:
    """The job already recorded for this delivery (a redelivery) or for this body (a replay), if any."""
    if existing := select_jobs(POSTGRES, conn, "delivery_id = ?", (req.delivery_id,)):
        return SubmitResult(existing[0], created=False)
    if req.body_digest and (same := select_jobs(POSTGRES, conn, "body_sha256 = ?", (req.body_digest,))):
        return SubmitResult(same[0], created=False, replayed=True)
    return None
