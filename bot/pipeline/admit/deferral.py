"""A job GitHub's rate limit stopped before its status comment existed: back to the queue, within its attempts.

Each claim of a job counts one of `MINIFIX_MAX_CLAIMS`; a deferred job keeps its claim spent, so a job GitHub
keeps refusing ends after that many: with a comment that says so, or, where even that cannot be posted, one
`job_lost_notice` error line holding everything an operator needs to tell the maintainer.
"""

from __future__ import annotations

import structlog

from bot.github.gateway import GitHubError, GitHubGateway, RateLimited
from bot.jobs import Job, JobOutcome, JobStatus, Outcome
from bot.render import outcome, render
from bot.settings import Settings

log = structlog.get_logger(__name__)


def rate_limited(job: Job, gh: GitHubGateway, exc: RateLimited, run_id: str, settings: Settings) -> JobOutcome:
    """Defer the job by the wait GitHub asked for, or, its attempts spent, end it where the maintainer sees it."""
    error = f"{Outcome.GITHUB_RATE_LIMITED}: {exc}"
    if job.attempts < settings.max_claims:
        log.warning(
            "job_deferred", error=str(exc), retry_in_s=exc.retry_after, attempt=job.attempts, of=settings.max_claims
        )
        return JobOutcome(JobStatus.QUEUED, run_id=run_id, error=error, retry_in=exc.retry_after)
    _tell(job, gh, str(exc), run_id)
    return JobOutcome(JobStatus.FAILED, run_id=run_id, error=error)


def _tell(job: Job, gh: GitHubGateway, detail: str, run_id: str) -> None:
    """The last ending's comment; when GitHub refuses that too, the error line an operator acts on."""
    run = {"run_id": run_id, "attempts": job.attempts, "model": "", "exit_status": ""}
    done = outcome(Outcome.GITHUB_RATE_LIMITED, run=run, paths=[])
    body = render("outcome_comment.md", outcome=done, run=run, detail=detail, stats=None, links={"run": None})
    try:
        gh.create_comment(job.issue, body)
    except GitHubError as exc:
        log.error(
            "job_lost_notice",
            message="nothing could be posted: the requester has not been told this job ended",
            job_id=job.id,
            kind=job.kind,
            installation=job.installation_id,
            repo=job.repo,
            issue=job.issue,
            requester=job.requester,
            delivery_id=job.delivery_id,
            attempts=job.attempts,
            first_error=detail,
            notice_error=str(exc),
        )
        return
    try:
        gh.add_reaction(job.issue, done.reaction)
    except GitHubError as exc:  # the comment says it all
        log.warning("outcome_reaction_failed", error=str(exc))
