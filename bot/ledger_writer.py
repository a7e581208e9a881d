"""Group commit: one thread owns the write connection and commits every queued write in one transaction.

Concurrent deliveries then cost one fsync per batch instead of queueing on SQLite's write lock
(field notes: "SQLite on the webhook path"). Each caller's future resolves after the commit holding its row.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import structlog

from bot import metrics

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]
_STOP = None
MAX_BATCH = 1024

log = structlog.get_logger(__name__)


class GroupCommitWriter:
    """Runs write operations on one connection, many per transaction, each in its own savepoint."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._ops: queue.SimpleQueue[tuple[Op, Future[Any]] | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ledger-writer", daemon=True)
        self._thread.start()

    def submit(self, op: Callable[[sqlite3.Connection], T]) -> Future[T]:
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
            self._ops.put(_STOP)
            self._thread.join()

    def _run(self) -> None:
        conn = self._connect()
        try:
            while (first := self._ops.get()) is not _STOP:
                batch = [first]
                stopping = self._drain(batch)
                self._commit(conn, batch)
                if stopping:
                    break
        finally:
            conn.close()

    def _drain(self, batch: list[tuple[Op, Future[Any]]]) -> bool:
        while len(batch) < MAX_BATCH:
            try:
                item = self._ops.get_nowait()
            except queue.Empty:
                return False
            if item is _STOP:
                return True
            batch.append(item)
        return False

    def _commit(self, conn: sqlite3.Connection, batch: list[tuple[Op, Future[Any]]]) -> None:
        outcomes = commit_batch(conn, [op for op, _ in batch])
        for (_, future), (result, error) in zip(batch, outcomes, strict=True):
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


def commit_batch(conn: sqlite3.Connection, ops: list[Op]) -> list[tuple[Any, BaseException | None]]:
    """Run `ops` in one transaction, each in its own savepoint; (result, error) per op, after the commit."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        outcomes = [run_in_savepoint(conn, op) for op in ops]
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        log.error("ledger commit failed", error=str(exc), batch=len(ops))
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        outcomes = [(None, exc) for _ in ops]
    metrics.LEDGER_BATCH.observe(len(ops))
    return outcomes


def run_in_savepoint(conn: sqlite3.Connection, op: Op) -> tuple[Any, BaseException | None]:
    # A failing op rolls back only its own writes; the rest of the batch still commits.
    conn.execute("SAVEPOINT op")
    try:
        result = op(conn)
    except Exception as exc:
        conn.execute("ROLLBACK TO op")
        conn.execute("RELEASE op")
        return None, exc
    conn.execute("RELEASE op")
    return result, None
