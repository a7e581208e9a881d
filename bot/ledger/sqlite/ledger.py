"""The job ledger on SQLite (WAL, synchronous=FULL); every write is group-committed (webhook ones on the loop)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bot.forge_ids import forge_key
from bot.jobs import Job, JobRequest
from bot.ledger import fair, pr_outcomes, usage
from bot.ledger.contract import SubmitResult
from bot.ledger.sql_base import SqlLedger
from bot.ledger.sqlite import installs as ledger_sqlite_installs
from bot.ledger.sqlite import ops as ledger_sqlite_ops
from bot.ledger.sqlite.loop import LoopGroupCommit
from bot.ledger.writer import GroupCommitWriter


class SqliteLedger(SqlLedger[sqlite3.Connection]):
    """The Ledger on one SQLite file. Reads use one connection per thread; writes go through one writer
    thread, except `submit_async`, group-committed on the calling event loop's thread (the webhook path)."""

    dialect = ledger_sqlite_ops.SQLITE
    ops = ledger_sqlite_ops
    installs = ledger_sqlite_installs

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        with self._connect() as conn:
            conn.executescript(ledger_sqlite_ops.SCHEMA)
            ledger_sqlite_ops.migrate(conn)
            conn.executescript(ledger_sqlite_installs.SCHEMA)
            for statement in (*pr_outcomes.SCHEMAS, *usage.SQLITE_SCHEMA):
                conn.execute(statement)
        super().__init__(GroupCommitWriter(self._connect))
        self._loop_writer = LoopGroupCommit(self._connect)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    def _update(self, text: str, *params: Any) -> bool:
        return bool(self._writer.submit(ledger_sqlite_ops.held(text, *params)).result())

    async def submit_async(self, req: JobRequest) -> SubmitResult:
        """Record a job from an event loop: committed on the loop's thread with everything else pending there."""
        if not req.delivery_id:
            raise ValueError("a job request needs its delivery id (idempotency key)")
        return await self._loop_writer.submit(
            lambda conn: ledger_sqlite_ops.submit_long(conn, req),
            first=lambda conn: ledger_sqlite_ops.submit_first(conn, req),  # the common case, without a savepoint
        )

    def remember_label(self, key: str, label: str | None, *, installation_id: int) -> None:
        """Cache the trigger label of `owner/name`, or of an owner as `owner/*` (None forgets it), on the forge of
        `installation_id`."""
        key = forge_key(key, installation_id)
        self._writer.submit(lambda conn: ledger_sqlite_installs.remember_label(conn, key, label)).result()

    def take_label_chore(self) -> tuple[int, str] | None:
        """The oldest (installation id, owner/name) still needing its trigger label, removed from the list."""
        chore: tuple[int, str] | None = self._writer.submit(ledger_sqlite_installs.take_label_chore).result()
        return chore

    def claim(self, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
        """Take a queued job, or a running one whose lease expired (one attempt more)."""
        op = lambda conn: ledger_sqlite_ops.claim(conn, job_id, worker_id, lease_seconds)  # noqa: E731
        return self._writer.submit(op).result()

    def claim_next(self, worker_id: str, lease_seconds: float, policy: fair.ClaimPolicy) -> Job | None:
        """Take the fairest claimable run; on the writer thread, so choosing and claiming are one transaction."""
        op = lambda conn: fair.claim_next(self.dialect, conn, worker_id, lease_seconds, policy)  # noqa: E731
        return self._writer.submit(op).result()

    def close(self) -> None:
        """Commit what is queued, stop both writers, close every connection."""
        super().close()
        self._loop_writer.close()
