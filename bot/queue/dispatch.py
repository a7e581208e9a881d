"""The dispatch queue: job ids on huey's storage. The ledger is the truth.

SqliteHuey in the data dir on one host; with a postgresql:// database URL, PostgresHuey in the ledger's database
(`FOR UPDATE SKIP LOCKED` dequeue, `LISTEN/NOTIFY` wake-ups), so an API replica's job reaches a worker on any host
at once instead of at the next reconciler sweep.

Workers pull with `run_next` rather than running huey's consumer: the worker process keeps its own threads and
signal handling, and a job starts within a fraction of a second of its dispatch. The task code is the same on
PostgresHuey or RedisHuey, so scaling out only changes `build_queue`.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable

import structlog
from huey import Huey, SqliteHuey
from huey.api import Task
from huey.storage import SqliteStorage

from bot.settings import Settings

log = structlog.get_logger(__name__)
TASK_NAME = "mini_fix.run_job"
DROPPED = Task()  # what `_dequeue` returns for an entry it took off the queue unread


class JobQueue:
    """Job ids waiting for a worker; `dispatch` is non-blocking for the webhook path."""

    def __init__(self, huey: Huey) -> None:
        self.huey = huey
        self._handler: Callable[[str], object] | None = None
        self._task = huey.task(name=TASK_NAME)(self._execute)
        self._wake = threading.Event()
        self._outbox: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._dispatcher: threading.Thread | None = None
        self._lock = threading.Lock()
        # A local SQLite queue is cheap to write from the event loop, in one transaction per batch; a queue over
        # the network (PostgresHuey, RedisHuey) keeps the dispatch thread so the loop never waits on it.
        self._local = isinstance(huey.storage, SqliteStorage)
        self._batch: list[str] = []

    def bind(self, handler: Callable[[str], object]) -> None:
        """Set what running a job id means (the worker's `run_job`)."""
        self._handler = handler

    def _execute(self, job_id: str) -> None:
        if self._handler is None:
            raise RuntimeError("no worker bound to this queue")
        self._handler(job_id)

    def enqueue(self, job_id: str) -> None:
        """Put a job id on the queue now (durable in huey's storage)."""
        self._task(job_id)
        self._wake.set()

    def dispatch(self, job_id: str) -> None:
        """Enqueue soon: batched on the running event loop (local SQLite queue), else from a background thread."""
        if self._local and _on_a_loop():
            self._batch.append(job_id)
            if len(self._batch) == 1:
                asyncio.get_running_loop().call_soon(self._flush_batch)
            return
        with self._lock:
            if self._dispatcher is None:
                self._dispatcher = threading.Thread(target=self._drain, name="queue-dispatch", daemon=True)
                self._dispatcher.start()
        self._outbox.put(job_id)

    def _drain(self) -> None:
        while (job_id := self._outbox.get()) is not None:
            try:
                self.enqueue(job_id)
            except Exception:
                # The ledger row is committed: the reconciler dispatches it later.
                log.exception("enqueue failed", job_id=job_id)

    def _flush_batch(self) -> None:
        ids, self._batch = self._batch, []
        storage = self.huey.storage
        try:
            rows = [(storage.name, storage.to_blob(self.huey.serialize_task(self._task.s(i))), 0) for i in ids]
            with storage.db(commit=True) as cursor:  # huey's own insert, one transaction for the batch
                cursor.executemany("insert into task (queue, data, priority) values (?, ?, ?)", rows)
        except Exception:
            # The ledger rows are committed: the reconciler dispatches them later.
            log.exception("enqueue failed", job_ids=ids)
            return
        self._wake.set()

    def pending_ids(self) -> set[str]:
        """Job ids waiting in the queue (entries it cannot read are skipped: `run_next` drops them)."""
        ids = set()
        for data in self.huey.storage.enqueued_items():
            task = self._readable(data)
            if task is not None and task.name == TASK_NAME and task.args:
                ids.add(str(task.args[0]))
        return ids

    def _readable(self, data: bytes) -> Task | None:
        """The task in a queue entry, or None for one of an older layout or another task (huey would log a
        traceback for each, at every read)."""
        try:
            task: Task = self.huey.deserialize_task(data)
        except Exception:
            return None
        return task

    def depth(self) -> int:
        """How many job ids wait in the queue."""
        return int(self.huey.pending_count())

    def run_next(self, wait: float, stop: threading.Event | None = None) -> bool:
        """Run the next job id through huey (which calls the bound handler); wait up to `wait` s for one, or until
        `wake` once `stop` is set."""
        task = self._dequeue()  # PostgresHuey blocks here on LISTEN for up to its read timeout
        if task is None and self._local:
            self._wake.clear()
            task = self._dequeue()  # one more look, so an enqueue racing the clear is not missed
            # and one at `stop` after the clear: a stop (set before its `wake`) racing the clear is not missed either
            if task is None and not (stop is not None and stop.is_set()):
                self._wake.wait(wait)
        if task is None:
            return False
        if task is not DROPPED:
            self.huey.execute(task)
        return True

    def wake(self) -> None:
        """End `run_next`'s waits on a local queue now: a stopping worker (its `stop` set first) calls it, so its idle
        slots return at once instead of at their next poll."""
        self._wake.set()

    def _dequeue(self) -> Task | None:
        """The next task; an entry it cannot read (an older layout, a task renamed by an upgrade) is taken off the
        queue with one warning line and returned as DROPPED: the ledger's reconciler dispatches its job again."""
        data = self.huey.storage.dequeue()
        if data is None:
            return None
        task = self._readable(data)
        if task is None or task.name != TASK_NAME:
            log.warning("queue_entry_dropped", reason="not a job id this version can read", size=len(data))
            return DROPPED
        return task

    def close(self) -> None:
        """Finish pending dispatches and close the storage."""
        with self._lock:
            if self._dispatcher is not None:
                self._outbox.put(None)
                self._dispatcher.join()
                self._dispatcher = None
        if self._batch:  # dispatched on a loop that stopped before its flush ran
            self._flush_batch()
        self._wake.set()
        self.huey.storage.close()


def _on_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def build_queue(settings: Settings) -> JobQueue:
    """The queue for these settings: PostgresHuey on a postgresql:// database URL, else SqliteHuey (data dir)."""
    url = settings.database_url or ""
    if settings.uses_postgres:
        from bot.queue.postgres import postgres_huey

        return JobQueue(postgres_huey(url))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    huey = SqliteHuey("mini-fix", filename=str(settings.data_dir / "queue.db"), results=False)
    # The ledger is the durable record and the reconciler re-dispatches any queued row the queue lacks, so the
    # queue need not fsync each enqueue: WAL + synchronous=NORMAL cannot corrupt the file, and costs a third of
    # the CPU per enqueue on the webhook burst path.
    huey.storage.conn.execute("PRAGMA synchronous=NORMAL")
    return JobQueue(huey)
