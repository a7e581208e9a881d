"""`Pipeline Hook`: a failed pipeline of one of mini-fix's MRs, for a commit mini-fix pushed → one `ci` follow-up.

GitLab sends one hook per status change (pending, running, failed, ...): only `failed` acts, and the key is the
commit's, so a retried pipeline that fails again on the same commit asks for nothing more. Pipelines for mini-fix's
pushes carry mini-fix's bot as `user`: its other hooks are ignored, these are what the follow-up is for; a person's
push has a person as `user` and gets none. A branch pipeline has `merge_request: null` and names no MR: ignored.
"""

from __future__ import annotations

from bot.gitlab.webhooks_context import bot_merge_request, is_bot_user, project
from bot.jobs import JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_str, ignore
from bot.webhooks.followups import ci_key

FAILED = "failed"  # canceled, skipped, manual, success: no follow-up


def decide(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """Decide a `Pipeline Hook` delivery."""
    status = dig_str(payload, "object_attributes", "status")
    if status != FAILED:
        return ignore(f"pipeline status {status!r} is not a failure")
    where = project(payload)
    if isinstance(where, Decision):
        return where
    mr = dig(payload, "merge_request")
    if mr is None:
        return ignore("a branch pipeline (merge_request: null) names no merge request")
    ours = bot_merge_request(where, mr)
    if isinstance(ours, Decision):
        return ours
    if dig_str(mr, "state") not in (None, "opened"):
        return ignore("the merge request is not open")
    if not is_bot_user(where.user, settings):
        return ignore("the pipeline is not for mini-fix's own push (a person's push has a person as user)")
    sha = dig_str(payload, "object_attributes", "sha")
    if not sha:
        return ignore("payload lacks object_attributes.sha")
    details = JobDetails(pull_request=ours.iid, head_sha=sha, delivery=delivery_id)
    key = ci_key(where.repo, ours.iid, sha)
    job = JobRequest(JobKind.CI, where.installation_id, where.repo, ours.issue, where.user, key, details=details)
    return Decision("enqueue", "pipeline failed on mini-fix's commit", job=job)
