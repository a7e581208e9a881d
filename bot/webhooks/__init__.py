"""Webhook decisions: which job, if any, a delivery asks for. One module per feature, routed by event."""

from __future__ import annotations

from collections.abc import Callable

from bot.jobs import CancelRequest, InstallationChange
from bot.policy import refusal
from bot.settings import Settings
from bot.webhooks import checks, comments, installations, issues, pull_requests, reviews
from bot.webhooks.decision import Decision, Payload, dig_str, ignore

__all__ = ["CancelRequest", "Decision", "InstallationChange", "decide"]

Handler = Callable[[Payload, Settings, str], Decision]
# Events about one repository, checked against the allow/deny lists.
GUARDED = frozenset(
    {"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment"}
    | {"check_suite", "check_run", "workflow_run", "workflow_job"}
)
ROUTES: dict[str, Handler] = {
    "issues": issues.decide,
    "issue_comment": comments.decide,
    "installation": installations.decide,
    "installation_repositories": installations.decide,
    "pull_request": pull_requests.decide,
    "pull_request_review": reviews.decide_review,
    "pull_request_review_comment": reviews.decide_comment,
    "check_suite": checks.decide_suite,
    "workflow_run": checks.decide_workflow_run,
    "check_run": checks.decide_part,
    "workflow_job": checks.decide_part,
}


def decide(event: str, payload: Payload, settings: Settings, *, delivery_id: str = "") -> Decision:
    """A pure function of the delivery: what to do about it. Never calls GitHub or a model."""
    handler = ROUTES.get(event)
    if handler is None:
        return ignore(f"event {event!r} is not handled")
    repo = dig_str(payload, "repository", "full_name")
    if event in GUARDED and repo and (refused := refusal(settings, repo)):
        return ignore(refused)
    return handler(payload, settings, delivery_id)
