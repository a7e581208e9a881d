"""Group commit on PostgreSQL: the writer thread of bot/ledger_writer.py, committing through psycopg.

Writes racing another process (a unique index or a deadlock between two API replicas) are retried once in a
fresh savepoint; the rest of the batch commits. A broken connection is replaced before the next batch.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors

from bot.ledger.writer import BatchWriter, Op, Outcome, log

Conn = psycopg.Connection[Any]
RETRYABLE = (errors.UniqueViolation, errors.DeadlockDetected, errors.SerializationFailure)


class PostgresGroupCommitWriter(BatchWriter[Conn]):
    """The writer thread on PostgreSQL: one transaction per batch, a nested transaction (savepoint) per op."""

    connect_errors = (psycopg.Error,)

    def usable(self, conn: Conn) -> bool:
        """False once the connection was closed or broke."""
        return not (conn.closed or conn.broken)

    def commit_batch(self, conn: Conn, ops: list[Op]) -> list[Outcome]:
        """Run `ops` in one transaction, each in its own savepoint; (result, error) per op, after the commit."""
        try:
            with conn.transaction():
                outcomes = [_run_in_savepoint(conn, op) for op in ops]
        except psycopg.Error as exc:
            log.error("ledger commit failed", error=str(exc), batch=len(ops))
            return [(None, exc) for _ in ops]
        return outcomes


def _run_in_savepoint(conn: Conn, op: Op, retries: int = 1) -> Outcome:
    try:
        with conn.transaction():  # nested: a savepoint, rolled back alone when op raises
            return op(conn), None
    except RETRYABLE as exc:
        if retries > 0:
            return _run_in_savepoint(conn, op, retries - 1)
        return None, exc
    except Exception as exc:
        return None, exc
