"""What the webhook path checks in the ledger around `decide`: a repository's own label, dead installations, caps.

Each is one indexed read of the ledger; nothing here calls GitHub.
"""

from __future__ import annotations

from dataclasses import replace

from bot.jobs import JobStatus
from bot.policy import over_queue_cap
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig_int, dig_str, ignore
from bot.webhooks.lookups import LedgerReads

LABEL_ACTIONS = ("labeled", "unlabeled")


def settings_for(event: str, payload: Payload, settings: Settings, ledger: LedgerReads) -> Settings:
    """The settings to decide with: the trigger label a worker last read from the repository's config."""
    if event != "issues" or dig_str(payload, "action") not in LABEL_ACTIONS:
        return settings
    repo = dig_str(payload, "repository", "full_name")
    installation_id = dig_int(payload, "installation", "id") or 0  # GitHub's: positive (none: no job follows)
    label = ledger.trigger_label(repo, installation_id=installation_id) if repo else None
    return settings if label is None or label == settings.label else settings.model_copy(update={"label": label})


def guard(decision: Decision, settings: Settings, ledger: LedgerReads) -> Decision:
    """No job for a deleted or suspended installation; mark a job over its installation's queue cap."""
    job = decision.job
    if job is None:
        return decision
    if not ledger.installation_active(job.installation_id):
        return ignore(f"installation {job.installation_id} is suspended or deleted")
    if settings.max_queued_per_installation > 0 and not job.kind.is_control:
        queued = ledger.count_jobs(job.installation_id, JobStatus.QUEUED, other_than=(job.repo, job.issue))
        if over_queue_cap(settings, queued):
            job = replace(job, details=replace(job.details, queue_full=True))
            return replace(decision, job=job, reason=f"{decision.reason} (queue full: {queued} queued)")
    return decision
