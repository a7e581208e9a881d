"""Group commit on PostgreSQL: one thread commits every queued write in one transaction, each in a savepoint.

The webhook path then costs one commit per batch, as on SQLite. Writes racing another process (a unique index
or a deadlock between two API replicas) are retried once in a fresh savepoint; the rest of the batch commits.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import psycopg
import structlog
from psycopg import errors

from bot import metrics

T = TypeVar("T")
Conn = psycopg.Connection[Any]
Op = Callable[[Conn], Any]
MAX_BATCH = 1024
RETRYABLE = (errors.UniqueViolation, errors.DeadlockDetected, errors.SerializationFailure)

log = structlog.get_logger(__name__)


class PostgresGroupCommitWriter:
    """Runs write operations on one connection, many per transaction, each in its own savepoint."""

    def __init__(self, connect: Callable[[], Conn]) -> None:
        self._connect = connect
        self._ops: queue.SimpleQueue[tuple[Op, Future[Any]] | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ledger-writer", daemon=True)
        self._thread.start()

    def submit(self, op: Callable[[Conn], T]) -> Future[T]:
        """Queue `op`; its future resolves with op's result after the commit (or with its exception)."""
        if self._closed:
            raise RuntimeError("the ledger is closed")
        future: Future[T] = Future()
        self._ops.put((op, future))
        return future

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        if not self._closed:
            self._closed = True
            self._ops.put(None)
            self._thread.join()

    def _run(self) -> None:
        conn: Conn | None = None
        while (first := self._ops.get()) is not None:
            batch = [first]
            stopping = self._drain(batch)
            if conn is None or conn.closed or conn.broken:
                conn = self._reconnect(batch)
            if conn is not None:
                self._commit(conn, batch)
            if stopping:
                break
        if conn is not None:
            conn.close()

    def _reconnect(self, batch: list[tuple[Op, Future[Any]]]) -> Conn | None:
        try:
            return self._connect()
        except psycopg.Error as exc:
            log.error("ledger connection failed", error=str(exc))
            for _, future in batch:
                future.set_exception(exc)
            return None

    def _drain(self, batch: list[tuple[Op, Future[Any]]]) -> bool:
        while len(batch) < MAX_BATCH:
            try:
                item = self._ops.get_nowait()
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)
        return False

    def _commit(self, conn: Conn, batch: list[tuple[Op, Future[Any]]]) -> None:
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        try:
            with conn.transaction():
                outcomes = [(future, *_run_in_savepoint(conn, op)) for op, future in batch]
        except psycopg.Error as exc:
            log.error("ledger commit failed", error=str(exc), batch=len(batch))
            outcomes = [(future, None, exc) for _, future in batch]
        metrics.LEDGER_BATCH.observe(len(batch))
        for future, result, error in outcomes:
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


def _run_in_savepoint(conn: Conn, op: Op, retries: int = 1) -> tuple[Any, BaseException | None]:
    try:
        with conn.transaction():  # nested: a savepoint, rolled back alone when op raises
            return op(conn), None
    except RETRYABLE as exc:
        if retries > 0:
            return _run_in_savepoint(conn, op, retries - 1)
        return None, exc
    except Exception as exc:
        return None, exc
