"""The operator's guards: which owners and repositories may use the App, and how much one installation may queue."""

from __future__ import annotations

from bot.jobs import Job, JobOutcome, JobStatus
from bot.settings import Settings

QUEUE_FULL = "queue_full"
"""How the error of a job refused for a full queue begins (the webhook path sets `JobDetails.queue_full`)."""


def _listed(value: str, names: list[str]) -> bool:
    # GitHub logins and repository names compare case-insensitively.
    return value.casefold() in {n.casefold() for n in names}


def refusal(settings: Settings, repo: str) -> str | None:
    """Why the operator's allow/deny lists refuse `repo` (owner/name), or None when it may use the App."""
    owner = repo.split("/", 1)[0]
    if _listed(owner, settings.deny_owners):
        return f"owner {owner} is in MINIFIX_DENY_OWNERS"
    if _listed(repo, settings.deny_repos):
        return f"repository {repo} is in MINIFIX_DENY_REPOS"
    restricted = bool(settings.allow_owners or settings.allow_repos)
    if restricted and not (_listed(owner, settings.allow_owners) or _listed(repo, settings.allow_repos)):
        return f"repository {repo} is not in MINIFIX_ALLOW_OWNERS or MINIFIX_ALLOW_REPOS"
    return None


def over_queue_cap(settings: Settings, queued: int) -> bool:
    """Whether an installation that already has `queued` jobs waiting may not queue one more."""
    cap = settings.max_queued_per_installation
    return cap > 0 and queued >= cap


def queue_full_outcome(job: Job, settings: Settings) -> JobOutcome:
    """How a job refused for a full queue ends in the ledger."""
    cap = settings.max_queued_per_installation
    return JobOutcome(JobStatus.CANCELLED, error=f"{QUEUE_FULL}: installation {job.installation_id} had {cap} queued")
