"""The job ledger on PostgreSQL, for many API replicas and workers on many hosts sharing one database.

Multi-statement writes (submit, cancel, installations) go through the group-commit writer; single-statement
writes (claim, renew, finish, requeue) run at once on the calling thread's connection, each atomic on its own:
a claim is one conditional UPDATE … RETURNING, so two workers racing for a job cannot both win it.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
from concurrent.futures import Future
from typing import Any

import psycopg

from bot import ledger_postgres_installs as installs
from bot import ledger_postgres_ops as ops
from bot.jobs import Job, JobRequest, JobStatus
from bot.ledger import SubmitResult
from bot.ledger_postgres_writer import PostgresGroupCommitWriter
from bot.webhooks.decision import InstallationChange


class PostgresLedger:
    """The Ledger on a PostgreSQL database (psycopg 3); the same rules as SqliteLedger."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()
        self._conns: builtins.list[psycopg.Connection[Any]] = []
        self._conns_lock = threading.Lock()
        ops.create_schema(self._conn(), *installs.SCHEMA)
        self._writer = PostgresGroupCommitWriter(self._connect)

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True)

    def _conn(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._local.conn = self._connect()
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _update(self, sql: str, *params: Any) -> bool:
        return self._conn().execute(sql, params).rowcount == 1

    def submit_nowait(self, req: JobRequest) -> Future[SubmitResult]:
        """Record a job; the future resolves once the row is committed."""
        if not req.delivery_id:
            raise ValueError("a job request needs its delivery id (idempotency key)")
        return self._writer.submit(lambda conn: ops.submit(conn, req))

    def submit(self, req: JobRequest) -> SubmitResult:
        """Record a job and wait for the commit."""
        return self.submit_nowait(req).result()

    def cancel(self, repo: str, issue: int, reason: str, *, on_pull_request: bool = False) -> builtins.list[Job]:
        """Cancel the issue's queued or running job; returns the jobs stopped."""
        return self._writer.submit(lambda conn: ops.cancel(conn, repo, issue, reason, on_pull_request)).result()

    def record_installation(self, change: InstallationChange) -> builtins.list[Job]:
        """Record an installation event (and its label chores); returns the jobs it cancelled."""

        def op(conn: psycopg.Connection[Any]) -> builtins.list[Job]:
            installs.record(conn, change)
            return ops.record_installation(conn, change)

        return self._writer.submit(op).result()

    def installation_active(self, installation_id: int) -> bool:
        """False when the installation was deleted or is suspended."""
        return installs.active(self._conn(), installation_id)

    def trigger_label(self, repo: str) -> str | None:
        """The trigger label a worker last read from the repository's (or its owner's) config; None = default."""
        return installs.trigger_label(self._conn(), repo)

    def remember_label(self, key: str, label: str | None) -> None:
        """Cache the trigger label of `owner/name`, or of an owner as `owner/*` (None forgets it)."""
        installs.remember_label(self._conn(), key, label)

    def take_label_chore(self) -> tuple[int, str] | None:
        """The oldest (installation id, owner/name) still needing its trigger label, removed from the list."""
        return installs.take_label_chore(self._conn())

    def count_jobs(self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None) -> int:
        """Fix and retry jobs of an installation in `status` (queue-full ones and one issue's left out)."""
        return installs.count(self._conn(), installation_id, status.value, other_than=other_than)

    def installation(self, installation_id: int) -> dict[str, Any] | None:
        """The recorded installation: account, suspended, repositories; None when unknown or deleted."""
        row = (
            self._conn()
            .execute("SELECT account, suspended, repositories FROM installations WHERE id = %s", (installation_id,))
            .fetchone()
        )
        if row is None:
            return None
        return {"account": row[0], "suspended": bool(row[1]), "repositories": json.loads(row[2])}

    def get(self, job_id: str) -> Job | None:
        """One job, or None."""
        found = ops.select_jobs(self._conn(), "id = %s", (job_id,))
        return found[0] if found else None

    def list(self, limit: int = 50) -> builtins.list[Job]:
        """The newest jobs first."""
        return ops.select_jobs(self._conn(), "TRUE ORDER BY created_at DESC, seq DESC LIMIT %s", (limit,))

    def claim(self, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
        """Take a queued job, or a running one whose lease expired (one attempt more)."""
        now = time.time()
        return ops.one_job(self._conn(), ops.CLAIM, (worker_id, now + lease_seconds, now, job_id, now))

    def renew(self, job_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease; False when the job is no longer running under this worker."""
        return self._update(ops.RENEW, time.time() + lease_seconds, job_id, worker_id)

    def finish(
        self,
        job_id: str,
        worker_id: str,
        status: JobStatus,
        *,
        pr_url: str | None = None,
        run_id: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Record a run's end; a cancelled job stays cancelled. False when another worker holds it."""
        return self._update(ops.FINISH, status.value, pr_url, run_id, error, time.time(), job_id, worker_id)

    def requeue(self, job_id: str, worker_id: str) -> bool:
        """Back to queued without spending an attempt (the worker is shutting down)."""
        return self._update(ops.REQUEUE, time.time(), job_id, worker_id)

    def expired(self, now: float) -> builtins.list[Job]:
        """Running jobs whose lease ended before `now`."""
        return ops.select_jobs(self._conn(), "status = 'running' AND lease_expires_at < %s", (now,))

    def queued_ids(self) -> builtins.list[str]:
        """Ids of every queued job, oldest first."""
        rows = self._conn().execute("SELECT id FROM jobs WHERE status = 'queued' ORDER BY created_at, seq")
        return [r[0] for r in rows]

    def is_cancelled(self, job_id: str) -> bool:
        """True when the job was cancelled or superseded."""
        job = self.get(job_id)
        return job is not None and job.status in (JobStatus.CANCELLED, JobStatus.SUPERSEDED)

    def close(self) -> None:
        """Commit what is queued, stop the writer, close every connection."""
        self._writer.close()
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
