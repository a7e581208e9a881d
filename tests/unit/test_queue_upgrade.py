"""Queue entries this version cannot read (an older layout, a renamed task) are dropped with one warning line
each; the ledger's reconciler dispatches their jobs again."""

from __future__ import annotations

import logging

import pytest
import structlog
from huey import MemoryHuey

from bot.queue.dispatch import JobQueue, build_queue
from bot.settings import Settings


def old_layout_entry() -> bytes:
    """A queue entry written by another version: a task name this one does not register."""
    old = MemoryHuey("old", immediate=False)
    renamed = old.task(name="mini_fix.run_job_v0")(lambda job_id: None)
    return bytes(old.serialize_task(renamed.s("old-job")))


def test_unreadable_entries_are_dropped_quietly(settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    queue: JobQueue = build_queue(settings)
    ran: list[str] = []
    queue.bind(ran.append)
    try:
        queue.huey.storage.enqueue(b"\x80\x04not a pickle at all")
        queue.huey.storage.enqueue(old_layout_entry())
        queue.enqueue("job-1")
        with caplog.at_level(logging.DEBUG, logger="huey"), structlog.testing.capture_logs() as logs:
            assert queue.pending_ids() == {"job-1"}
            assert [queue.run_next(0) for _ in range(3)] == [True, True, True]
            assert queue.run_next(0) is False
        assert ran == ["job-1"]
        assert [e["event"] for e in logs] == ["queue_entry_dropped", "queue_entry_dropped"]
        assert not [r for r in caplog.records if r.name.startswith("huey") and r.levelno >= logging.WARNING]
        assert queue.depth() == 0
    finally:
        queue.close()
