"""Group commit driven by the event loop, for the webhook path on SQLite.

Each request appends its write to a pending list. One `call_soon` step runs everything pending on the loop's own
thread inside one FULL transaction (each write in a savepoint); only the COMMIT, whose fsync costs 0.5-2 ms here,
goes to a commit thread, and its completion resolves the whole batch's futures in one loop callback. Requests
arriving meanwhile form the next batch. So a delivery costs a list append, not a thread hand-off, and the loop
never sits in an fsync. The ledger's other writers (worker claim, renew, finish) keep the writer thread: both
connections share the file in WAL with a busy timeout.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import structlog

from bot import metrics
from bot.ledger.writer import MAX_BATCH, Op, run_in_savepoint

T = TypeVar("T")
Pending = tuple[Op, "Op | None", "asyncio.Future[Any]"]
Outcome = tuple[Any, BaseException | None]

log = structlog.get_logger(__name__)


class LoopGroupCommit:
    """Runs write operations on the calling event loop's thread, all pending ones in one transaction."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._conn: sqlite3.Connection | None = None
        self._committer: ThreadPoolExecutor | None = None
        self._pending: list[Pending] = []
        self._busy = False  # a batch is between its BEGIN and the end of its COMMIT
        self._lock = threading.Lock()  # only contended when two event loops share one ledger (tests)
        self._closed = False

    def submit(
        self, op: Callable[[sqlite3.Connection], T], *, first: Callable[[sqlite3.Connection], T | None] | None = None
    ) -> asyncio.Future[T]:
        """Queue `op` for the loop's next batch; the future resolves after the commit holding its writes.

        `op` runs in its own savepoint. `first`, when given, is tried before it without one, so it must be one
        statement (atomic by itself): when it returns a result, that is the outcome and `op` never runs; None means
        it wrote nothing and `op` runs. A savepoint costs two statements and a copy of each page it touches."""
        if self._closed:
            raise RuntimeError("the ledger is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._pending.append((op, first, future))
            start = not self._busy and len(self._pending) == 1
        if start:
            loop.call_soon(self._start)
        return future

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._busy or not self._pending or self._closed:
                return
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            self._busy = True
            if self._conn is None:
                self._conn = self._connect()
                self._committer = ThreadPoolExecutor(1, thread_name_prefix="ledger-commit")
            conn, committer = self._conn, self._committer
        assert committer is not None
        try:
            conn.execute("BEGIN IMMEDIATE")
            outcomes = [_run(conn, op, first) for op, first, _ in batch]
        except sqlite3.Error as exc:
            self._failed(conn, batch, exc)
            self._finish(batch, [(None, exc)] * len(batch), loop)
            return
        commit = committer.submit(conn.execute, "COMMIT")
        commit.add_done_callback(lambda f: _call_soon(loop, self._committed, batch, outcomes, f, loop))

    def _committed(
        self, batch: list[Pending], outcomes: list[Outcome], commit: Future[Any], loop: asyncio.AbstractEventLoop
    ) -> None:
        error = commit.exception()
        if error is not None:
            self._failed(self._conn, batch, error)
            outcomes = [(None, error)] * len(batch)
        self._finish(batch, outcomes, loop)

    def _failed(self, conn: sqlite3.Connection | None, batch: list[Pending], error: BaseException) -> None:
        log.error("ledger commit failed", error=str(error), batch=len(batch))
        if conn is not None and conn.in_transaction:
            conn.execute("ROLLBACK")

    def _finish(self, batch: list[Pending], outcomes: list[Outcome], loop: asyncio.AbstractEventLoop) -> None:
        metrics.LEDGER_BATCH.observe(len(batch))
        with self._lock:
            self._busy = False
            more = bool(self._pending)
        for (_, _, future), (result, error) in zip(batch, outcomes, strict=True):
            _resolve(future, result, error, loop)
        if more:
            self._start()

    def close(self) -> None:
        """Refuse new writes, wait for a commit in flight, close the connection."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, []
            committer, conn = self._committer, self._conn
            self._committer = self._conn = None
        for _, _, future in pending:
            _resolve(future, None, RuntimeError("the ledger is closed"), None)
        if committer is not None:
            committer.shutdown(wait=True)
        if conn is not None:
            conn.close()


def _run(conn: sqlite3.Connection, op: Op, first: Op | None) -> Outcome:
    if first is not None:
        try:
            result = first(conn)
        except Exception as exc:  # one statement: SQLite rolled back its writes, the batch's other writes stand
            return None, exc
        if result is not None:
            return result, None
    return run_in_savepoint(conn, op)


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    if not loop.is_closed():  # a commit that ends after its loop stopped: the rows are committed, nobody waits
        loop.call_soon_threadsafe(callback, *args)


def _resolve(
    future: asyncio.Future[Any], result: Any, error: BaseException | None, running: asyncio.AbstractEventLoop | None
) -> None:
    loop = future.get_loop()
    if loop is running:
        _set(future, result, error)
    else:
        _call_soon(loop, _set, future, result, error)


def _set(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the request was cancelled (client went away); its row is committed all the same
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
