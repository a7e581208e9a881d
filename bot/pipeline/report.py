"""The last step: the status comment's final edit, the failure comment when there is no PR, the job's outcome."""

from __future__ import annotations

from typing import Any

import structlog

from bot import signing
from bot.jobs import JobOutcome, JobStatus, Outcome
from bot.pipeline.state import RunState
from bot.render import outcome, render
from bot.settings import Settings

log = structlog.get_logger(__name__)
JOB_STATUS = {
    Outcome.PR_OPENED: JobStatus.SUCCEEDED,
    Outcome.PR_UPDATED: JobStatus.SUCCEEDED,
    Outcome.CANCELLED: JobStatus.CANCELLED,
    Outcome.PR_ENDED: JobStatus.CANCELLED,
    Outcome.REQUEUED: JobStatus.QUEUED,
}
# No separate comment for these: the PR, the stopper or the next attempt says it all.
QUIET_OUTCOMES = {Outcome.PR_OPENED, Outcome.PR_UPDATED, Outcome.CANCELLED, Outcome.REQUEUED, Outcome.PR_ENDED}


def report(state: RunState, key: Outcome, detail: str, settings: Settings) -> JobOutcome:
    """Final status edit, the failure comment when there is no PR, the closing reaction."""
    status = JOB_STATUS.get(key, JobStatus.FAILED)
    pr_url = state.published.pr.url if state.published else None
    log.info("job_finished", outcome=key, detail=detail, pr_url=pr_url)
    run, judged = state.status.info(), state.judged
    done = outcome(key, run=run, paths=list(judged.paths))
    trajectory = judged.link_run_id or (state.run_id if state.count == 1 else None)
    links = {"pr": pr_url, "run": run_link(settings, trajectory) if trajectory else None}
    comment = (
        None
        if key in QUIET_OUTCOMES
        else render(
            "outcome_comment.md",
            outcome=done,
            run=run,
            detail=detail,
            stats=_stats(state),
            links=links,
            attempts_table=judged.table,
        )
    )
    state.status.close(done, links, comment=comment)
    error = None if status == JobStatus.SUCCEEDED else f"{key}: {detail}" if detail else key
    return JobOutcome(status, pr_url=pr_url, run_id=judged.link_run_id or state.run_id, error=error)


def _stats(state: RunState) -> dict[str, Any] | None:
    """Steps, wall time and tokens: the one attempt's, or the sum over several (None before any agent ran)."""
    candidates = state.judged.candidates
    if state.count > 1 and candidates:
        return {
            "steps": sum(c.steps for c in candidates),
            "elapsed": max(c.seconds for c in candidates),
            "tokens": sum(c.tokens for c in candidates),
            "attempts": len(candidates),
        }
    result = state.judged.result
    if result is None:
        return None
    return {
        "steps": result.steps,
        "elapsed": result.elapsed_seconds,
        "tokens": result.prompt_tokens + result.completion_tokens,
    }


def run_link(settings: Settings, run_id: str) -> str | None:
    """The run's viewer page on this App, signed so only holders of the link can read it; None without a public URL."""
    return signing.signed_run_url(settings, run_id)
