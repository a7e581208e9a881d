"""The control lane: one thread per worker process that runs `/agent stop` and `/agent help` jobs at once, and
decides waiting `/agent retry`s (a writer's cancels the issue's run, `bot/worker/retries.py`).

Control jobs also travel the dispatch queue, but a run slot may be busy for an hour: this lane reads the ledger
for queued control jobs every poll and claims them itself, so a stop never waits behind the run it should stop.
The claim is the ledger's conditional update, so a control job runs once whichever lane or slot gets it first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from bot.ledger.contract import Ledger

POLL_SECONDS = 0.5
log = structlog.get_logger(__name__)


class ControlLane:
    """Polls the ledger for queued control jobs and runs each through `run_job` (the worker's claim-and-run)."""

    def __init__(self, ledger: Ledger, run_job: Callable[[str], object], *, poll: float = POLL_SECONDS) -> None:
        self.ledger, self.run_job, self.poll = ledger, run_job, poll
        self.polls = 0  # ledger reads so far (tests bound a stop's delay in polls, not seconds)
        self.admit: Callable[[], object] | None = None  # waiting `/agent retry`s decided (bot/worker/retries.py)

    def loop(self, stopping: threading.Event) -> None:
        """Run until `stopping` is set."""
        while not stopping.is_set():
            try:
                self.once()
            except Exception:
                log.exception("control lane read failed")
            stopping.wait(self.poll)

    def once(self) -> int:
        """One poll: run every queued control job; how many there were."""
        self.polls += 1
        ids = self.ledger.queued_ids(control=True)
        for job_id in ids:
            self.run_job(job_id)
        if self.admit is not None:
            self.admit()
        return len(ids)
