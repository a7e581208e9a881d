"""Where a job's change starts and where it goes: fixes start from the default branch, retries and follow-ups
from the PR branch's head (a person's commits kept); every push holds a lease on the commit the job saw, and a
branch someone moved meanwhile is left alone (the change goes to a new branch)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.github.gateway import BotIdentity, RepoInfo
from bot.jobs import Job, JobKind
from bot.pipeline.git import gitops
from bot.pipeline.task.issue import cap, clean

log = structlog.get_logger(__name__)

MAX_SUBJECTS = 20
MAX_BUILDS_ON_CHARS = 3_000


@dataclass(frozen=True)
class Start:
    """Where the job's checkout comes from and what its push may replace."""

    branch: str  # the issue's branch, mini-fix/issue-<N>
    source: str  # the branch cloned: the issue's branch (building on the PR) or the default branch
    lease: str  # the issue branch's head when the job started, gitops.NO_BRANCH when it had none
    on_pr: bool  # the change goes on top of the PR branch's head
    default_branch: str


@dataclass(frozen=True)
class Pushed:
    """Where the commit went and what happened on the way."""

    branch: str
    sha: str
    diverted: bool = False  # the issue's branch moved during the run: the commit is on a new branch
    base_moved: bool = False  # the default branch moved during the run (fixes only)
    conflicts: bool = False  # ... and the change does not apply cleanly on its new head


def plan_start(job: Job, repo: RepoInfo, number: int, token: gitops.Token) -> Start:
    """Retries and follow-ups build on the issue's branch when it exists (`--fresh`: from the default branch)."""
    branch = gitops.branch_name(number)
    lease = gitops.remote_head(repo.clone_url, token, branch) or gitops.NO_BRANCH
    on_pr = job.kind.builds_on_pr and not job.details.fresh and lease != gitops.NO_BRANCH
    return Start(branch, branch if on_pr else repo.default_branch, lease, on_pr, repo.default_branch)


def builds_on(checkout: Path, token: gitops.Token, start: Start, *, depth: int) -> str:
    """For the agent's task: the earlier change on the PR branch (its commits' subjects and diff stat against the
    default branch); empty when the job starts from the default branch, or when git cannot tell (a fetch that fails
    leaves it out rather than end the run)."""
    if not start.on_pr:
        return ""
    try:
        base = gitops.fetch(checkout, token, start.default_branch, depth=depth)
        subjects = gitops.log_subjects(checkout, base, limit=MAX_SUBJECTS)
        stat = gitops.diff_stat(checkout, base)
    except gitops.GitError as exc:
        log.warning("builds_on_unknown", error=str(exc))
        return ""
    lines = "\n".join(f"- {cap(clean(s), 200)}" for s in subjects) or "- (no commits beyond the default branch)"
    text = (
        f"## What this run builds on\n\nThis checkout is the pull request's branch `{start.branch}`: it already holds "
        f"these commits on top of `{start.default_branch}` (newest first), by mini-fix and possibly by people:\n"
        f"{lines}\n\nFiles they change:\n```\n{cap(clean(stat), 1500)}\n```\n"
        "Work on top of them: keep what they do unless the guidance asks otherwise; "
        "your change is added as a new commit."
    )
    return cap(text, MAX_BUILDS_ON_CHARS)


def push(
    checkout: Path, token: gitops.Token, start: Start, *, kind: JobKind, identity: BotIdentity, run_id: str
) -> Pushed:
    """Push the committed change: a fix first follows a moved default branch (when the change applies cleanly),
    then the issue's branch with a lease on its head at the start; a branch moved meanwhile gets a new one."""
    base_moved = conflicts = False
    if kind == JobKind.FIX:
        parent = gitops.head(checkout, "HEAD~1")
        now = gitops.fetch(checkout, token, start.default_branch, depth=1)
        if now != parent:
            base_moved = True
            conflicts = not gitops.replay_onto(checkout, identity, now)
    try:
        gitops.push(checkout, token, start.branch, lease=start.lease)
        return Pushed(start.branch, gitops.head(checkout), base_moved=base_moved, conflicts=conflicts)
    except gitops.LeaseRejected:
        sha = gitops.head(checkout)
        if gitops.remote_head(gitops.origin_url(checkout), token, start.branch) == sha:
            return Pushed(start.branch, sha, base_moved=base_moved, conflicts=conflicts)  # an earlier try landed
        other = f"{start.branch}-{run_id}"
        gitops.push(checkout, token, other, lease=gitops.NO_BRANCH)
        return Pushed(other, gitops.head(checkout), diverted=True, base_moved=base_moved, conflicts=conflicts)
