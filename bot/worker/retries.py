"""A person's `/agent retry` while the issue's run works: checked at once, and only a writer's cancels that run.

The webhook path asks GitHub nothing, so it records such a retry as `waiting` (it cancels nothing there). The
control lane calls `RetryAdmission.once` every poll: the requester's permission is asked, a reader's retry is
denied (one comment), a writer's takes the issue over (`Ledger.take_over`: the running run cancelled, a queued one
folded into the retry's run) and is dispatched.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from bot.github.gateway import GitHubError, GitHubGateway, can_write
from bot.jobs import Job, JobStatus
from bot.ledger.contract import Ledger
from bot.pipeline.task.asks import deny

RETRY_AFTER_ERROR = 30.0  # seconds before a retry whose permission GitHub would not tell is asked about again
log = structlog.get_logger(__name__)


class RetryAdmission:
    """Decides the waiting retries of every issue (see the module's docstring)."""

    def __init__(
        self,
        ledger: Ledger,
        github: Callable[[int, str], GitHubGateway],
        dispatch: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ledger, self.github, self.dispatch, self.clock = ledger, github, dispatch, clock
        self._later: dict[str, float] = {}  # job id -> when to ask again (GitHub failed to answer)

    def once(self) -> int:
        """Decide every waiting retry not set aside; how many were decided."""
        decided = 0
        for job in self.ledger.waiting_retries():
            if self._later.get(job.id, 0.0) > self.clock():
                continue
            try:
                self._decide(job)
                decided += 1
            except GitHubError as exc:
                log.warning("retry_permission_unknown", job_id=job.id, error=str(exc))
                self._later[job.id] = self.clock() + RETRY_AFTER_ERROR
        return decided

    def _decide(self, job: Job) -> None:
        gh = self.github(job.installation_id, job.repo)
        role = gh.permission(job.requester)
        if not can_write(role):
            # Settled first: of several workers deciding the same retry, one comments.
            if self.ledger.settle_ask(job.id, JobStatus.DENIED, f"requester role is {role}"):
                deny(job, gh, role)
                log.info("retry_denied", job_id=job.id, role=role)
            return
        taken = self.ledger.take_over(job.id)
        if taken is None:
            return
        self.dispatch(job.id)
        log.info(
            "retry_took_over",
            job_id=job.id,
            cancelled=[j.id for j in taken.cancelled],
            folded=[j.id for j in taken.superseded],
        )
