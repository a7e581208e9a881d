"""Group commit: one thread owns the write connection and commits every queued write in one transaction.

Concurrent deliveries then cost one fsync per batch instead of queueing on SQLite's write lock
(field notes: "SQLite on the webhook path"). Each caller's future resolves after the commit holding its row.
`BatchWriter` is the thread and its queue; each driver says how a batch commits (SQLite here, PostgreSQL in
bot/ledger_postgres_writer.py).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, Protocol, TypeVar

import structlog

from bot import metrics


class Connection(Protocol):
    """What the writer needs of a DB-API connection beyond what its driver's ops use."""

    def close(self) -> None: ...


T = TypeVar("T")
C = TypeVar("C", bound=Connection)
Op = Callable[[Any], Any]
Outcome = tuple[Any, BaseException | None]
Item = tuple[Op, "Future[Any]"]
MAX_BATCH = 1024

log = structlog.get_logger(__name__)


class BatchWriter(Generic[C]):
    """Runs write operations on one connection, many per transaction, each in its own savepoint."""

    connect_errors: tuple[type[Exception], ...] = (Exception,)

    def __init__(self, connect: Callable[[], C]) -> None:
        self._connect = connect
        self._ops: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ledger-writer", daemon=True)
        self._thread.start()

    def submit(self, op: Callable[[C], T]) -> Future[T]:
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

    def commit_batch(self, conn: C, ops: list[Op]) -> list[Outcome]:
        """Run `ops` in one transaction, each in its own savepoint; (result, error) per op, after the commit."""
        raise NotImplementedError

    def usable(self, conn: C) -> bool:
        """False when the connection must be replaced before the next batch."""
        return True

    def _run(self) -> None:
        conn: C | None = None
        while (first := self._ops.get()) is not None:
            batch = [first]
            stopping = self._drain(batch)
            if conn is None or not self.usable(conn):
                conn = self._reconnect(batch)
            if conn is not None:
                self._commit(conn, batch)
            if stopping:
                break
        if conn is not None:
            conn.close()

    def _reconnect(self, batch: list[Item]) -> C | None:
        try:
            return self._connect()
        except self.connect_errors as exc:
            log.error("ledger connection failed", error=str(exc))
            for _, future in batch:
                future.set_exception(exc)
            return None

    def _drain(self, batch: list[Item]) -> bool:
        while len(batch) < MAX_BATCH:
            try:
                item = self._ops.get_nowait()
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)
        return False

    def _commit(self, conn: C, batch: list[Item]) -> None:
        outcomes = self.commit_batch(conn, [op for op, _ in batch])
        metrics.LEDGER_BATCH.observe(len(batch))
        for (_, future), (result, error) in zip(batch, outcomes, strict=True):
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


class GroupCommitWriter(BatchWriter[sqlite3.Connection]):
    """The writer thread on SQLite: BEGIN IMMEDIATE, one SAVEPOINT per op, one COMMIT."""

    connect_errors = (sqlite3.Error,)

    def commit_batch(self, conn: sqlite3.Connection, ops: list[Op]) -> list[Outcome]:
        """Run `ops` in one transaction, each in its own savepoint; (result, error) per op, after the commit."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            outcomes = [run_in_savepoint(conn, op) for op in ops]
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            log.error("ledger commit failed", error=str(exc), batch=len(ops))
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return [(None, exc) for _ in ops]
        return outcomes


def run_in_savepoint(conn: sqlite3.Connection, op: Op) -> Outcome:
    """Run one op in its own savepoint; a failing op rolls back only its own writes."""
    conn.execute("SAVEPOINT op")
    try:
        result = op(conn)
    except Exception as exc:
        conn.execute("ROLLBACK TO op")
        conn.execute("RELEASE op")
        return None, exc
    conn.execute("RELEASE op")
    return result, None
