"""Reviews of the App's PRs: changes requested, or inline comments, → one `review` follow-up per review.

A review reaches the App as `pull_request_review` plus one `pull_request_review_comment` per inline comment; all of
them share the review's key, so the ledger records one job. The worker checks the reviewer's permission and reads
the review's body and comments through the API: nothing of a review by someone without write access reaches the model.
"""

from __future__ import annotations

from bot.jobs import JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks import pull_requests
from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, from_bot, ignore
from bot.webhooks.followups import AppPull, app_pull, review_key

CHANGES_REQUESTED = "changes_requested"


def decide_review(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """A submitted review: its verdict is recorded (as before); changes requested also asks for a follow-up."""
    recorded = pull_requests.decide(payload, settings, delivery_id)
    state = (dig_str(payload, "review", "state") or "").lower()
    if dig_str(payload, "action") != "submitted" or state != CHANGES_REQUESTED or from_bot(payload):
        return recorded
    job = _job(payload, dig_int(payload, "review", "id"), delivery_id)
    if isinstance(job, Decision):
        return recorded
    return Decision("enqueue", "changes requested", job=job, pr_event=recorded.pr_event)


def decide_comment(payload: Payload, _settings: Settings, delivery_id: str) -> Decision:
    """A new inline comment of a review: a follow-up for the review it belongs to (the same job as its siblings)."""
    if dig_str(payload, "action") != "created":
        return ignore("only new review comments ask for a follow-up")
    if from_bot(payload):
        return ignore("sender is a bot")
    job = _job(payload, dig_int(payload, "comment", "pull_request_review_id"), delivery_id)
    return job if isinstance(job, Decision) else Decision("enqueue", "inline review comment", job=job)


def _job(payload: Payload, review_id: int | None, delivery_id: str) -> JobRequest | Decision:
    pull = dig(payload, "pull_request")
    target = app_pull(payload, pull, dig_str(payload, "pull_request", "head", "ref"))
    if isinstance(target, Decision):
        return target
    if review_id is None:
        return ignore("payload names no review")
    return _request(target, payload, review_id, delivery_id)


def _request(target: AppPull, payload: Payload, review_id: int, delivery_id: str) -> JobRequest:
    details = JobDetails(
        pull_request=target.pull,
        review_id=review_id,
        head_sha=dig_str(payload, "pull_request", "head", "sha") or "",
        delivery=delivery_id,
    )
    sender = dig_str(payload, "sender", "login") or ""
    key = review_key(target.repo, target.pull, review_id)
    return JobRequest(JobKind.REVIEW, target.installation_id, target.repo, target.issue, sender, key, details=details)
