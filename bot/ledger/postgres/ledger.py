"""The job ledger on PostgreSQL, for many API replicas and workers on many hosts sharing one database.

Multi-statement writes (submit, cancel, installations) go through the group-commit writer; single-statement
writes (claim, renew, finish, requeue) run at once on the calling thread's connection, each atomic on its own:
a claim is one conditional UPDATE … RETURNING, so two workers racing for a job cannot both win it.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from bot.forge_ids import forge_key
from bot.jobs import Job
from bot.ledger import fair, pr_outcomes, usage
from bot.ledger.postgres import installs as ledger_postgres_installs
from bot.ledger.postgres import ops as ledger_postgres_ops
from bot.ledger.postgres.writer import PostgresGroupCommitWriter
from bot.ledger.sql_base import SqlLedger

Conn = psycopg.Connection[Any]


class PostgresLedger(SqlLedger[Conn]):
    """The Ledger on a PostgreSQL database (psycopg 3); the same rules as SqliteLedger."""

    dialect = ledger_postgres_ops.POSTGRES
    ops = ledger_postgres_ops
    installs = ledger_postgres_installs

    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__(PostgresGroupCommitWriter(self._connect))
        ledger_postgres_ops.create_schema(
            self._conn(), *ledger_postgres_installs.SCHEMA, *pr_outcomes.SCHEMAS, *usage.POSTGRES_SCHEMA
        )

    def _connect(self) -> Conn:
        return psycopg.connect(self.url, autocommit=True)

    def _usable(self, conn: Conn) -> bool:
        return not (conn.closed or conn.broken)

    def _update(self, text: str, *params: Any) -> bool:
        return bool(self._read(text, params).rowcount == 1)

    def remember_label(self, key: str, label: str | None, *, installation_id: int) -> None:
        """Cache the trigger label of `owner/name`, or of an owner as `owner/*` (None forgets it), on the forge of
        `installation_id`."""
        ledger_postgres_installs.remember_label(self._conn(), forge_key(key, installation_id), label)

    def take_label_chore(self) -> tuple[int, str] | None:
        """The oldest (installation id, owner/name) still needing its trigger label, removed from the list."""
        return ledger_postgres_installs.take_label_chore(self._conn())

    def claim(self, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
        """Take a queued job, or a running one whose lease expired (one attempt more)."""
        now = time.time()
        params = (worker_id, now + lease_seconds, now, now, job_id, now, now)
        return self._on_conn(lambda conn: ledger_postgres_ops.one_job(conn, ledger_postgres_ops.CLAIM, params))

    def claim_next(self, worker_id: str, lease_seconds: float, policy: fair.ClaimPolicy) -> Job | None:
        """Take the fairest claimable run: every worker's choice and claim hold one advisory lock, so no two see
        the same free place under the running cap."""

        def op(conn: Conn) -> Job | None:
            for tries_left in (1, 0):
                try:
                    with conn.transaction():
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (ledger_postgres_ops.CLAIM_LOCK,))
                        return fair.claim_next(self.dialect, conn, worker_id, lease_seconds, policy)
                except psycopg.errors.DeadlockDetected:  # another process's schema change queued between us
                    if not tries_left:
                        raise
            return None

        return self._on_conn(op)
