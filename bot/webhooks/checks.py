"""`check_suite` and `workflow_run` on the App's PRs: a failed suite on the App's own head commit → a `ci` follow-up.

`check_run` and `workflow_job` are parts of a suite: they are read and answered, but the follow-up waits for the
whole suite so that it sees every failure. Several deliveries about one commit share one key: one job per commit.
"""

from __future__ import annotations

from bot.jobs import JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_str, ignore
from bot.webhooks.followups import AppPull, ci_key, committed_by_sender, first_app_pull, is_bot

FAILED = frozenset({"failure", "timed_out"})  # cancelled, skipped, neutral, stale, action_required: no follow-up


def decide_suite(payload: Payload, _settings: Settings, delivery_id: str) -> Decision:
    """Decide a `check_suite` delivery."""
    return _completed(payload, "check_suite", delivery_id)


def decide_workflow_run(payload: Payload, _settings: Settings, delivery_id: str) -> Decision:
    """Decide a `workflow_run` delivery (the Actions side of a check suite: same commit, same key)."""
    return _completed(payload, "workflow_run", delivery_id)


def decide_part(payload: Payload, _settings: Settings, _delivery_id: str) -> Decision:
    """`check_run` and `workflow_job`: one run of a suite; the suite's completion decides."""
    return ignore("one run of a suite: the follow-up waits for the check suite to complete")


def _completed(payload: Payload, key: str, delivery_id: str) -> Decision:
    suite = dig(payload, key)
    if dig_str(payload, "action") != "completed" or not isinstance(suite, dict):
        return ignore(f"{key}.{dig_str(payload, 'action')} is not a completed suite")
    conclusion = dig_str(suite, "conclusion")
    if conclusion not in FAILED:
        return ignore(f"conclusion {conclusion!r} is not a failure")
    branch, sha = dig_str(suite, "head_branch"), dig_str(suite, "head_sha")
    target = first_app_pull(payload, dig(suite, "pull_requests"), branch)
    if isinstance(target, Decision):
        return target
    # CI events for a commit the App pushed are sent by the App's bot: a person's push has a person as sender.
    if not is_bot(payload) or not committed_by_sender(payload, dig(suite, "head_commit")):
        return ignore("the head commit is not the App's own (a person or another app pushed it)")
    if not sha:
        return ignore(f"payload lacks {key}.head_sha")
    return Decision("enqueue", f"{key} {conclusion} on the App's commit", job=_job(target, payload, sha, delivery_id))


def _job(target: AppPull, payload: Payload, sha: str, delivery_id: str) -> JobRequest:
    details = JobDetails(pull_request=target.pull, head_sha=sha, delivery=delivery_id)
    sender = dig_str(payload, "sender", "login") or ""
    key = ci_key(target.repo, target.pull, sha)
    return JobRequest(JobKind.CI, target.installation_id, target.repo, target.issue, sender, key, details=details)
