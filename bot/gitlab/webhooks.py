"""GitLab webhook decisions: the same `Decision`s, `JobRequest`s and `CancelRequest`s as GitHub's route table.

A pure function of the delivery, routed by `X-Gitlab-Event`; nothing here calls GitLab or a model. A GitLab job's
`installation_id` is its top-level namespace's (negative) id, `repo` the project's `path_with_namespace`, `issue` an
issue's iid (a merge request's iid only where the MR is not one of mini-fix's branches).
"""

from __future__ import annotations

from collections.abc import Callable

from bot.gitlab import webhooks_issues, webhooks_mrs, webhooks_notes, webhooks_pipelines
from bot.gitlab.webhooks_context import project_path
from bot.policy import refusal
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig_str, ignore

__all__ = ["ROUTES", "decide"]

Handler = Callable[[Payload, Settings, str], Decision]
ROUTES: dict[str, Handler] = {
    "Issue Hook": webhooks_issues.decide,
    "Confidential Issue Hook": webhooks_issues.decide,
    "Note Hook": webhooks_notes.decide,
    "Confidential Note Hook": webhooks_notes.decide,
    "Merge Request Hook": webhooks_mrs.decide,
    "Pipeline Hook": webhooks_pipelines.decide,
}
# A System Hook (instance-wide install) says what it is in `object_kind`; GitLab sends merge requests through it.
SYSTEM_KINDS: dict[str, Handler] = {"merge_request": webhooks_mrs.decide}


def decide(event: str, payload: Payload, settings: Settings, *, delivery_id: str = "") -> Decision:
    """What a GitLab delivery asks for. Every handled event is about one project: the allow/deny lists apply."""
    handler = ROUTES.get(event)
    if event == "System Hook":
        handler = SYSTEM_KINDS.get(dig_str(payload, "object_kind") or "")
    if handler is None:
        return ignore(f"event {event!r} is not handled")
    repo = project_path(payload)
    if repo and (refused := refusal(settings, repo)):
        return ignore(refused)
    return handler(payload, settings, delivery_id)
