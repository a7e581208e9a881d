"""`pull_request` and `pull_request_review` on mini-fix's own PRs: what happened to them, recorded per run."""

from __future__ import annotations

from bot.jobs import REVIEW_STATES, PrEvent
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, from_bot, ignore

BRANCH_PREFIX = "mini-fix/"
PR_ACTIONS = {"closed": "closed", "reopened": "reopened", "synchronize": "human_push"}


def decide(payload: Payload, _settings: Settings, _delivery_id: str) -> Decision:
    """Record a close, reopen, a person's push or a review of a PR on one of mini-fix's branches."""
    installation_id = dig_int(payload, "installation", "id")
    repo = dig_str(payload, "repository", "full_name")
    pull = dig_int(payload, "pull_request", "number")
    sender = dig_str(payload, "sender", "login") or ""
    if installation_id is None or repo is None or pull is None:
        return ignore("payload lacks installation.id, repository.full_name or pull_request.number")
    if not (dig_str(payload, "pull_request", "head", "ref") or "").startswith(BRANCH_PREFIX):
        return ignore("not a mini-fix pull request")
    head_repo = dig_str(payload, "pull_request", "head", "repo", "full_name") or ""
    if head_repo.casefold() != repo.casefold():  # a fork's branch may be named mini-fix/... too
        return ignore("the pull request's head is not in the repository (a fork's)")
    if from_bot(payload):
        return ignore("sent by a bot (mini-fix's own pushes are not a person's)")
    event = _event(payload, installation_id, repo, pull, sender)
    if event is None:
        return ignore(f"pull request action {dig_str(payload, 'action')!r} is not recorded")
    return Decision("pr_outcome", f"pull request {event.kind}", pr_event=event)


def _event(payload: Payload, installation_id: int, repo: str, pull: int, sender: str) -> PrEvent | None:
    action = dig_str(payload, "action") or ""
    if "review" in payload:
        state = (dig_str(payload, "review", "state") or "").lower()
        review_id = dig_int(payload, "review", "id")
        if action != "submitted" or state not in REVIEW_STATES or review_id is None:
            return None
        # Kept unchecked: `author_association` is no permission (a read-only collaborator is COLLABORATOR, a private
        # org member may show as NONE), and this path asks GitHub nothing; a worker asks for the reviewer's.
        reviewer = dig_str(payload, "review", "user", "login") or sender
        return PrEvent(installation_id, repo, pull, "review", reviewer, review=state, review_id=review_id)
    kind = PR_ACTIONS.get(action)
    if kind is None:
        return None
    merged = dig(payload, "pull_request", "merged") is True
    return PrEvent(installation_id, repo, pull, kind, sender, merged=merged)
