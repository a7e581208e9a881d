"""The job ledger on SQLite (WAL, synchronous=FULL); every write is group-committed (webhook ones on the loop)."""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from bot import ledger_sqlite_installs as installs
from bot import ledger_sqlite_ops as ops
from bot.jobs import Job, JobRequest, JobStatus
from bot.ledger import SubmitResult
from bot.ledger_loop import LoopGroupCommit
from bot.ledger_writer import GroupCommitWriter
from bot.webhooks.decision import InstallationChange


class SqliteLedger:
    """The Ledger on one SQLite file. Reads use one connection per thread; writes go through one writer
    thread, except `submit_async`, group-committed on the calling event loop's thread (the webhook path)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._readers: builtins.list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        with self._connect() as conn:
            conn.executescript(ops.SCHEMA)
            conn.executescript(installs.SCHEMA)
        self._writer = GroupCommitWriter(self._connect)
        self._loop_writer = LoopGroupCommit(self._connect)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def submit_nowait(self, req: JobRequest) -> Future[SubmitResult]:
        """Record a job; the future resolves once the row is committed."""
        if not req.delivery_id:
            raise ValueError("a job request needs its delivery id (idempotency key)")
        return self._writer.submit(lambda conn: ops.submit(conn, req))

    async def submit_async(self, req: JobRequest) -> SubmitResult:
        """Record a job from an event loop: committed on the loop's thread with everything else pending there."""
        if not req.delivery_id:
            raise ValueError("a job request needs its delivery id (idempotency key)")
        return await self._loop_writer.submit(lambda conn: ops.submit(conn, req))

    def submit(self, req: JobRequest) -> SubmitResult:
        """Record a job and wait for the commit."""
        return self.submit_nowait(req).result()

    def cancel(
        self, repo: str, issue: int, reason: str, *, on_pull_request: bool = False
    ) -> builtins.list[Job]:
        """Cancel the issue's queued or running job; returns the jobs stopped."""
        return self._writer.submit(
            lambda conn: ops.cancel(conn, repo, issue, reason, on_pull_request)
        ).result()

    def record_installation(self, change: InstallationChange) -> builtins.list[Job]:
        """Record an installation event (and its label chores); returns the jobs it cancelled."""

        def op(conn: sqlite3.Connection) -> builtins.list[Job]:
            installs.record(conn, change)
            return ops.record_installation(conn, change)

        return self._writer.submit(op).result()

    def installation_active(self, installation_id: int) -> bool:
        """False when the installation was deleted or is suspended."""
        return installs.active(self._reader(), installation_id)

    def trigger_label(self, repo: str) -> str | None:
        """The trigger label a worker last read from the repository's (or its owner's) config; None = default."""
        return installs.trigger_label(self._reader(), repo)

    def remember_label(self, key: str, label: str | None) -> None:
        """Cache the trigger label of `owner/name`, or of an owner as `owner/*` (None forgets it)."""
        self._writer.submit(lambda conn: installs.remember_label(conn, key, label)).result()

    def take_label_chore(self) -> tuple[int, str] | None:
        """The oldest (installation id, owner/name) still needing its trigger label, removed from the list."""
        chore: tuple[int, str] | None = self._writer.submit(installs.take_label_chore).result()
        return chore

    def count_jobs(self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None) -> int:
        """Fix and retry jobs of an installation in `status` (queue-full ones and one issue's left out)."""
        return installs.count(self._reader(), installation_id, status.value, other_than=other_than)

    def installation(self, installation_id: int) -> dict[str, Any] | None:
        """The recorded installation: account, suspended, repositories; None when unknown or deleted."""
        row = (
            self._reader()
            .execute(
                "SELECT account, suspended, repositories FROM installations WHERE id = ?", (installation_id,)
            )
            .fetchone()
        )
        return (
            None
            if row is None
            else {"account": row[0], "suspended": bool(row[1]), "repositories": json.loads(row[2])}
        )

    def get(self, job_id: str) -> Job | None:
        """One job, or None."""
        found = ops.select_jobs(self._reader(), "id = ?", (job_id,))
        return found[0] if found else None

    def list(self, limit: int = 50) -> builtins.list[Job]:
        """The newest jobs first."""
        return ops.select_jobs(self._reader(), "1 = 1 ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,))

    def claim(self, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
        """Take a queued job, or a running one whose lease expired (one attempt more)."""
        return self._writer.submit(lambda conn: ops.claim(conn, job_id, worker_id, lease_seconds)).result()

    def renew(self, job_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease; False when the job is no longer running under this worker."""
        sql = "UPDATE jobs SET lease_expires_at = ? WHERE id = ? AND worker_id = ? AND status = 'running'"
        return bool(
            self._writer.submit(ops.held(sql, time.time() + lease_seconds, job_id, worker_id)).result()
        )

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
        sql = (
            "UPDATE jobs SET status = CASE status WHEN 'running' THEN ? ELSE status END, "
            "pr_url = COALESCE(?, pr_url), run_id = COALESCE(?, run_id), error = COALESCE(?, error), "
            "lease_expires_at = NULL, updated_at = ? WHERE id = ? AND worker_id = ?"
        )
        op = ops.held(sql, status.value, pr_url, run_id, error, time.time(), job_id, worker_id)
        return bool(self._writer.submit(op).result())

    def requeue(self, job_id: str, worker_id: str) -> bool:
        """Back to queued without spending an attempt (the worker is shutting down)."""
        sql = (
            "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_expires_at = NULL, "
            "attempts = MAX(attempts - 1, 0), updated_at = ? "
            "WHERE id = ? AND worker_id = ? AND status = 'running'"
        )
        return bool(self._writer.submit(ops.held(sql, time.time(), job_id, worker_id)).result())

    def expired(self, now: float) -> builtins.list[Job]:
        """Running jobs whose lease ended before `now`."""
        return ops.select_jobs(self._reader(), "status = 'running' AND lease_expires_at < ?", (now,))

    def queued_ids(self) -> builtins.list[str]:
        """Ids of every queued job, oldest first."""
        rows = self._reader().execute("SELECT id FROM jobs WHERE status = 'queued' ORDER BY created_at")
        return [r[0] for r in rows]

    def is_cancelled(self, job_id: str) -> bool:
        """True when the job was cancelled or superseded."""
        job = self.get(job_id)
        return job is not None and job.status in (JobStatus.CANCELLED, JobStatus.SUPERSEDED)

    def close(self) -> None:
        """Commit what is queued, stop the writer, close every connection."""
        self._writer.close()
        self._loop_writer.close()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
