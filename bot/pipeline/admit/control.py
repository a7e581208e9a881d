"""Control jobs in the worker: `/agent help` and `/agent stop`, each checked against the sender's permission first."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from bot.github.gateway import GitHubGateway, can_write
from bot.jobs import Job, JobKind, JobOutcome, JobStatus, Outcome
from bot.ledger import quota_notes
from bot.pipeline.errors import RunFailed
from bot.render import render

StopRuns = Callable[[str, int, str], list[Job]]  # (repo, issue, reason) -> the jobs stopped (Ledger.cancel)
log = structlog.get_logger(__name__)


def run_control(job: Job, gh: GitHubGateway, number: int, stop_runs: StopRuns | None, label: str) -> JobOutcome:
    """Refuse a non-writer politely; otherwise 👀 on the comment, then reply (help) or cancel the run (stop). A
    worker built without a ledger (`stop_runs` None) runs no control job."""
    if stop_runs is None:
        raise RunFailed(Outcome.AGENT_CRASHED, "this worker was built without a ledger to stop runs with")
    role = gh.permission(job.requester)
    if not can_write(role):
        body = render("command_denied.md", requester=job.requester, role=role, command=job.kind.value)
        gh.create_comment(number, body)
        log.info("command_denied", command=job.kind.value, role=role)
        return JobOutcome(JobStatus.DENIED, error=f"requester role is {role}")
    if job.comment_id:
        gh.add_reaction(number, "eyes", comment_id=job.comment_id)
    if job.kind == JobKind.HELP:
        unknown = job.details.unknown_command
        quota = quota_notes.remaining()  # the repository's remaining quota (bot/worker/quotas.py), when one is set
        gh.create_comment(
            number, render("help_comment.md", requester=job.requester, unknown=unknown, label=label, quota=quota)
        )
        return JobOutcome(JobStatus.SUCCEEDED)
    return _stop(job, gh, number, stop_runs)


def _stop(job: Job, gh: GitHubGateway, number: int, stop_runs: StopRuns) -> JobOutcome:
    stopped = stop_runs(job.repo, number, f"/agent stop by @{job.requester}")
    # A job some worker held was running: its own status comment will say who stopped it.
    running = [j for j in stopped if j.worker_id is not None]
    log.info("runs_stopped", jobs=[j.id for j in stopped], running=len(running))
    if not running:
        gh.create_comment(number, render("stop_comment.md", requester=job.requester, stopped=bool(stopped)))
    return JobOutcome(JobStatus.SUCCEEDED)
