"""The asks a run carries: its own and those that waited for it (a CI failure, a review, a retry), each checked.

While an issue's run works, the ledger keeps later asks `waiting` instead of letting them cancel it. The next run
takes them all: each is checked as its own job would be (a person's permission, the App's own CI commit still the
PR's head) before it has any effect, then marked `folded` into this run, or `denied`/`cancelled` with a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog

from bot.github.gateway import GitHubGateway, can_write
from bot.jobs import Job, JobKind, JobStatus
from bot.pipeline.task import followup
from bot.render import render

WaitingAsks = Callable[[str, int], list[Job]]  # (repo, issue) -> its waiting asks, oldest first
SettleAsk = Callable[[str, JobStatus, str], bool]  # (job id, status, why) -> False when it no longer waits

STALE_CI = "ci follow-up: the pull request has a newer head commit"
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class AskLedger:
    """The ledger's side of folding: read an issue's waiting asks, end one."""

    waiting: WaitingAsks
    settle: SettleAsk


def pull_of(job: Job) -> int:
    """The pull request an ask is about (the issue's number when it names none)."""
    return job.details.pull_request or job.issue


def role_of(job: Job, gh: GitHubGateway) -> str:
    """The role that decides whether an ask may have any effect: the App's own for its CI commit, else the
    requester's permission on the repository."""
    if job.kind == JobKind.CI:
        return "write" if job.requester == gh.bot_identity().name else "none"
    return gh.permission(job.requester)


def deny(job: Job, gh: GitHubGateway, role: str) -> None:
    """Tell a person their ask was not taken (where they asked: the PR for a review or a retry on it)."""
    if job.kind != JobKind.CI:
        gh.create_comment(pull_of(job), render("denied_comment.md", requester=job.requester, role=role))


def fold(job: Job, gh: GitHubGateway, asks: AskLedger | None) -> list[Job]:
    """The waiting asks this run carries besides its own, oldest first; the others ended with their reason."""
    if asks is None or job.kind.is_control:
        return []
    carried: list[Job] = []
    for waiting in asks.waiting(job.repo, job.issue):
        ask, status, why = _verdict(waiting, gh)
        if status == JobStatus.FOLDED:
            why = f"carried by job {job.id}"
        if not asks.settle(ask.id, status, why):
            continue  # a stop, or another run, took it meanwhile
        log.info("ask_settled", ask=ask.id, kind=ask.kind, status=status, why=why)
        if status == JobStatus.FOLDED:
            carried.append(ask)
        elif status == JobStatus.DENIED:
            deny(ask, gh, why.removeprefix("requester role is "))
        elif why == STALE_CI:  # a skipped follow-up says why on the PR, never silently
            note = render("followup_comment.md", kind="skipped", why="newer", sha=ask.details.head_sha[:12])
            gh.create_comment(pull_of(ask), note)
    return carried


def _verdict(ask: Job, gh: GitHubGateway) -> tuple[Job, JobStatus, str]:
    """How a waiting ask ends, and the ask as this run would carry it (with the PR it is about found)."""
    role = role_of(ask, gh)
    if not can_write(role):
        if ask.kind == JobKind.CI:
            return ask, JobStatus.CANCELLED, f"ci follow-up: sent by {ask.requester}, not the App"
        return ask, JobStatus.DENIED, f"requester role is {role}"
    located = followup.locate(ask, gh)  # a GitLab branch pipeline's CI ask names no merge request: found now
    if located is None:
        return ask, JobStatus.CANCELLED, followup.NO_OPEN_PR
    if located.kind == JobKind.CI and located.details.head_sha != gh.get_pr(pull_of(located)).head_sha:
        return located, JobStatus.CANCELLED, STALE_CI
    return located, JobStatus.FOLDED, ""
