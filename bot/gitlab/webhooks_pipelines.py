"""`Pipeline Hook`: a failed pipeline of one of mini-fix's branches, for a commit mini-fix pushed → one `ci`
follow-up.

GitLab sends one hook per status change (pending, running, failed, ...): only `failed` acts. Pipelines for mini-fix's
pushes carry mini-fix's bot as `user`: its other hooks are ignored, these are what the follow-up is for; a person's
push has a person as `user` and gets none.

Two kinds of pipeline fail the same way. A merge-request pipeline names its MR (`merge_request`): the MR's number
goes into the job. A branch pipeline (GitLab's default; `merge_request: null`) names only its branch
(`object_attributes.ref`, `tag` false): the job names no MR, and the worker looks up the open MR from that branch
(`followup.locate`; none: the job ends quietly). A project that runs both sends two failed hooks for one commit: the
key is the branch's (its issue) and the commit's, never the MR's, so both are one job, and a retried pipeline that
fails again asks for nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.gitlab.webhooks_context import BotMergeRequest, Project, bot_merge_request, is_bot_user, project
from bot.jobs import JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_str, ignore
from bot.webhooks.followups import issue_of_branch

FAILED = "failed"  # canceled, skipped, manual, success: no follow-up


def ci_commit_key(repo: str, issue: int, sha: str) -> str:
    """The follow-up's delivery id: the ledger records one job per key, so one per failed commit of the issue's
    branch, whichever pipeline (the branch's, the MR's) said so first."""
    return f"ci:{repo}:issue-{issue}:{sha}"


def decide(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """Decide a `Pipeline Hook` delivery."""
    status = dig_str(payload, "object_attributes", "status")
    if status != FAILED:
        return ignore(f"pipeline status {status!r} is not a failure")
    where = project(payload)
    if isinstance(where, Decision):
        return where
    mr = dig(payload, "merge_request")
    ours = _branch_pipeline(payload) if mr is None else _mr_pipeline(where, mr)
    if isinstance(ours, Decision):
        return ours
    if not is_bot_user(where.user, settings):
        return ignore("the pipeline is not for mini-fix's own push (a person's push has a person as user)")
    sha = dig_str(payload, "object_attributes", "sha")
    if not sha:
        return ignore("payload lacks object_attributes.sha")
    pull = ours.iid if isinstance(ours, BotMergeRequest) else None  # a branch pipeline's: found by the worker
    details = JobDetails(pull_request=pull, head_sha=sha, delivery=delivery_id)
    key = ci_commit_key(where.repo, ours.issue, sha)
    job = JobRequest(JobKind.CI, where.installation_id, where.repo, ours.issue, where.user, key, details=details)
    return Decision("enqueue", "pipeline failed on mini-fix's commit", job=job)


def _mr_pipeline(where: Project, mr: Any) -> BotMergeRequest | Decision:
    """A merge-request pipeline's MR, when it is one of mini-fix's and open."""
    ours = bot_merge_request(where, mr)
    if isinstance(ours, Decision):
        return ours
    if dig_str(mr, "state") not in (None, "opened"):
        return ignore("the merge request is not open")
    return ours


@dataclass(frozen=True)
class BotBranch:
    """A branch pipeline of one of mini-fix's `mini-fix/issue-<iid>` branches (its MR is the worker's to find)."""

    issue: int


def _branch_pipeline(payload: Payload) -> BotBranch | Decision:
    """A branch pipeline (`merge_request: null`) of one of mini-fix's branches; never a tag's."""
    if dig(payload, "object_attributes", "tag") is not False:
        return ignore("a tag pipeline (or one that does not say it is a branch's) names no branch of mini-fix")
    issue = issue_of_branch(dig_str(payload, "object_attributes", "ref"))
    if issue is None:
        return ignore("a branch pipeline of a branch other than mini-fix/issue-<iid>")
    return BotBranch(issue)
