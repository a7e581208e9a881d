"""`closed_on_cancel`: a cancel inside the block closes the sandbox; leaving the block never waits for the watcher."""

from __future__ import annotations

import threading

import pytest

from bot.pipeline.attempts.execute import closed_on_cancel
from bot.pipeline.errors import RunFailed
from tests.support.fake_sandbox import FakeSandbox


def test_a_cancel_inside_the_block_closes_the_sandbox_and_reads_cancelled() -> None:
    sandbox, cancel = FakeSandbox(), threading.Event()
    closed = threading.Event()
    original_close = sandbox.close

    def close() -> None:
        original_close()
        closed.set()

    sandbox.close = close  # type: ignore[method-assign]
    with pytest.raises(RunFailed) as failed, closed_on_cancel(sandbox, cancel, poll=0.05):
        cancel.set()
        assert closed.wait(30), "the watcher never closed the sandbox"
        raise RunFailed("sandbox_failed", "the container went away under the action")
    assert failed.value.outcome == "cancelled"
    assert sandbox.closed


def test_leaving_the_block_does_not_wait_out_the_watchers_poll() -> None:
    sandbox, cancel = FakeSandbox(), threading.Event()
    left = threading.Event()

    def run() -> None:
        with closed_on_cancel(sandbox, cancel, poll=3600):  # the watcher sleeps an hour between looks
            pass
        left.set()

    threading.Thread(target=run, daemon=True).start()
    assert left.wait(60), "leaving the block waited for the watcher's next poll"
    cancel.set()  # the watcher wakes now: the block is over, so it must leave the sandbox alone
    for thread in threading.enumerate():
        if thread.name == "cancel-watch":
            thread.join(30)
    assert not sandbox.closed
    sandbox.close()
