"""`issues` events: the trigger label starts a fix; removing it or closing the issue cancels."""

from __future__ import annotations

from collections.abc import Callable

from bot.jobs import CancelRequest, JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks.decision import (
    Decision,
    IssueContext,
    Payload,
    dig_str,
    from_bot,
    ignore,
    issue_context,
)


def _is_trigger_label(payload: Payload, settings: Settings) -> bool:
    name = dig_str(payload, "label", "name")
    # GitHub label names are unique case-insensitively.
    return name is not None and name.casefold() == settings.label.casefold()


def _labeled(ctx: IssueContext, payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    if not _is_trigger_label(payload, settings):
        return ignore(f"label is not {settings.label!r}")
    if ctx.is_pull_request:
        return ignore("labeled a pull request, not an issue")
    if ctx.state != "open":
        return ignore("the issue is closed")
    # The worker drops the job if the repository's config names another label (the webhook's label may be stale).
    details = JobDetails(label=dig_str(payload, "label", "name") or "")
    job = JobRequest(JobKind.FIX, ctx.installation_id, ctx.repo, ctx.issue, ctx.sender, delivery_id, details=details)
    return Decision("enqueue", f"label {settings.label!r} added", job=job)


def _cancel(ctx: IssueContext, reason: str) -> Decision:
    cancel = CancelRequest(ctx.installation_id, ctx.repo, ctx.issue, ctx.sender, reason)
    return Decision("cancel", reason, cancel=cancel)


def _unlabeled(ctx: IssueContext, payload: Payload, settings: Settings, _delivery_id: str) -> Decision:
    if not _is_trigger_label(payload, settings):
        return ignore(f"label is not {settings.label!r}")
    return _cancel(ctx, f"label {settings.label!r} removed")


def _closed(ctx: IssueContext, _payload: Payload, _settings: Settings, _delivery_id: str) -> Decision:
    return _cancel(ctx, "issue closed")


Handler = Callable[[IssueContext, Payload, Settings, str], Decision]
ROUTES: dict[str, Handler] = {"labeled": _labeled, "unlabeled": _unlabeled, "closed": _closed}


def decide(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """Decide an `issues` delivery."""
    action = dig_str(payload, "action") or ""
    handler = ROUTES.get(action)
    if handler is None:
        return ignore(f"issues.{action} is not a trigger")
    if from_bot(payload):
        return ignore("sender is a bot")
    ctx = issue_context(payload)
    return ctx if isinstance(ctx, Decision) else handler(ctx, payload, settings, delivery_id)
