"""`Issue Hook`: the trigger label newly in `changes.labels.current` starts a fix; removing it or closing cancels.

GitLab sends every edit as `action: update` (a label, the title, an assignee alike): only the label diff says that
the trigger label was added, so a later edit of a labelled issue starts nothing.
"""

from __future__ import annotations

from typing import Any

from bot.gitlab.webhooks_context import Project, is_bot_user, project
from bot.jobs import CancelRequest, JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, ignore


def label_titles(labels: Any) -> dict[str, str]:
    """The titles of a hook's label list, by casefolded title (GitLab label titles are unique that way)."""
    titles = (dig_str(label, "title") for label in labels) if isinstance(labels, list) else ()
    return {title.casefold(): title for title in titles if title}


def decide(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """Decide an `Issue Hook` delivery."""
    where = project(payload)
    if isinstance(where, Decision):
        return where
    if is_bot_user(where.user, settings):
        return ignore("sent by a bot (mini-fix's own edits come back as hooks)")
    iid = dig_int(payload, "object_attributes", "iid")
    if iid is None:
        return ignore("payload lacks object_attributes.iid")
    action = dig_str(payload, "object_attributes", "action") or ""
    if action == "close":
        return _cancel(where, iid, "issue closed")
    if action not in ("open", "update", "reopen"):
        return ignore(f"issue action {action!r} is not a trigger")
    changes = dig(payload, "changes", "labels")
    if not isinstance(changes, dict):
        return ignore("the labels did not change")
    trigger = settings.label.casefold()
    before, after = label_titles(changes.get("previous")), label_titles(changes.get("current"))
    if trigger in before and trigger not in after:
        return _cancel(where, iid, f"label {settings.label!r} removed")
    if trigger not in after or trigger in before:
        return ignore(f"label {settings.label!r} was not added")
    if dig_str(payload, "object_attributes", "state") not in (None, "opened"):
        return ignore("the issue is closed")
    # The worker drops the job if the project's config names another label (the webhook's label may be stale).
    details = JobDetails(label=after[trigger])
    job = JobRequest(JobKind.FIX, where.installation_id, where.repo, iid, where.user, delivery_id, details=details)
    return Decision("enqueue", f"label {settings.label!r} added", job=job)


def _cancel(where: Project, iid: int, reason: str) -> Decision:
    cancel = CancelRequest(where.installation_id, where.repo, iid, where.user, reason)
    return Decision("cancel", reason, cancel=cancel)
