"""`Merge Request Hook` on mini-fix's own MRs: closed or merged cancels the issue's runs (and is recorded as GitHub's
`pull_request.closed` is); a reviewer's state newly `requested_changes` → one `review` follow-up.

GitLab has no review object: a submitted review arrives as N diff-note hooks plus one `action: update` hook whose
`changes.reviewers` shows the reviewer's new state. The follow-up is keyed by (MR, reviewer, head commit), so
redeliveries and later edits of the MR while the state stands ask for no second one. `review_id` holds the reviewer's
user id: the worker reads that reviewer's unresolved discussions (and checks their role) through the API.
"""

from __future__ import annotations

from typing import Any

from bot.forge_ids import iid_of
from bot.gitlab.webhooks_context import BotMergeRequest, Project, bot_merge_request, is_bot_user, project
from bot.jobs import CancelRequest, JobDetails, JobKind, JobRequest, PrEvent
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, ignore

REQUESTED_CHANGES = "requested_changes"
ENDED = {"close": "closed", "merge": "merged"}


def decide(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """Decide a `Merge Request Hook` delivery."""
    where = project(payload)
    if isinstance(where, Decision):
        return where
    mr = dig(payload, "object_attributes")
    ours = bot_merge_request(where, mr)
    if isinstance(ours, Decision):
        return ours
    if is_bot_user(where.user, settings):
        return ignore("sent by a bot (mini-fix's own pushes and edits are not a person's)")
    action = dig_str(mr, "action") or ""
    if action in ENDED:
        return _ended(where, ours, action)
    if action == "reopen":
        event = PrEvent(where.installation_id, where.repo, ours.iid, "reopened", where.user)
        return Decision("pr_outcome", "merge request reopened", pr_event=event)
    if action != "update":
        return ignore(f"merge request action {action!r} is not recorded")
    reviewer = _requested_changes(payload)
    if reviewer is not None:
        return _review(where, ours, mr, reviewer, delivery_id)
    if dig_str(mr, "oldrev"):  # an update that pushed commits: a person's push to mini-fix's branch
        event = PrEvent(where.installation_id, where.repo, ours.iid, "human_push", where.user)
        return Decision("pr_outcome", "merge request human_push", pr_event=event)
    return ignore("an edit of the merge request")


def _ended(where: Project, ours: BotMergeRequest, action: str) -> Decision:
    reason = f"merge request !{iid_of(ours.iid)} {ENDED[action]}"
    cancel = CancelRequest(where.installation_id, where.repo, ours.issue, where.user, reason)
    event = PrEvent(where.installation_id, where.repo, ours.iid, "closed", where.user, merged=action == "merge")
    return Decision("cancel", reason, cancel=cancel, pr_event=event)


def _requested_changes(payload: Payload) -> int | None:
    """The user id of a reviewer whose state this update turned into `requested_changes`, else None."""
    changed = dig(payload, "changes", "reviewers")
    if not isinstance(changed, dict):
        return None
    before = {dig_int(r, "id"): dig_str(r, "state") for r in _list(changed.get("previous"))}
    for reviewer in _list(changed.get("current")):
        rid = dig_int(reviewer, "id")
        if rid is not None and dig_str(reviewer, "state") == REQUESTED_CHANGES and before.get(rid) != REQUESTED_CHANGES:
            return rid
    return None


def _list(value: Any) -> list[Any]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _review(where: Project, ours: BotMergeRequest, mr: Any, reviewer: int, delivery_id: str) -> Decision:
    sha = dig_str(mr, "last_commit", "id") or ""
    details = JobDetails(pull_request=ours.iid, review_id=reviewer, head_sha=sha, delivery=delivery_id)
    key = f"review:{where.repo}:{ours.iid}:{reviewer}:{sha}"
    job = JobRequest(JobKind.REVIEW, where.installation_id, where.repo, ours.issue, where.user, key, details=details)
    return Decision("enqueue", "changes requested", job=job)
