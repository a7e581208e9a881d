"""Comments the worker posts outside a run: a job it gave up on after its workers kept dying."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from bot.github.gateway import GitHubError, GitHubGateway
from bot.jobs import Job, Outcome
from bot.render import outcome, render

log = structlog.get_logger(__name__)


def gave_up_notifier(github: Callable[[int, str], GitHubGateway]) -> Callable[[Job], None]:
    """A worker `on_gave_up` hook that says on the issue what happened and how to retry."""

    def notify(job: Job) -> None:
        run = {"run_id": job.run_id or job.id, "attempts": job.attempts, "model": "", "exit_status": ""}
        body = render(
            "outcome_comment.md",
            outcome=outcome(Outcome.WORKER_LOST, run=run, paths=[]),
            run=run,
            detail=job.error or "",
            stats=None,
            links={"pr": job.pr_url, "run": None},
        )
        try:
            gh = github(job.installation_id, job.repo)
            gh.create_comment(job.issue, body)
            gh.add_reaction(job.issue, "confused")
        except GitHubError as exc:
            log.warning("gave_up_comment_failed", job_id=job.id, error=str(exc))

    return notify
