"""`ci` and `review` follow-ups in the worker: may one run, what new information its task gets, what it answers.

A follow-up is a job like any other (status comment, ledger, trajectory, `/agent stop`); this module adds what is
its own. Everything it reads from CI or a review is untrusted: quoted through `bot.pipeline.task.untrusted`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypedDict

import structlog

from bot.github.gateway import GitHubGateway, Review
from bot.jobs import AddressedComment, Job, JobKind, JobOutcome, JobStatus
from bot.pipeline.task.ci_evidence import read_evidence
from bot.pipeline.task.issue import cap
from bot.pipeline.task.untrusted import plain, quoted
from bot.render import render
from bot.repo_config.schema import DEFAULT_CI_FOLLOWUPS, RepoConfig
from bot.settings import Settings

FOLLOWUPS = (JobKind.CI, JobKind.REVIEW)
MAX_FOLLOWUP_CHARS = 16_000
MAX_REVIEW_BODY_CHARS = 3_000
MAX_HUNK_CHARS = 1_500
MAX_REVIEW_COMMENTS = 20
RAN = (JobStatus.SUCCEEDED, JobStatus.FAILED)
IssueJobs = Callable[[str, int], list[Job]]  # (repo, issue) -> its jobs, oldest first (Ledger.issue_jobs)

log = structlog.get_logger(__name__)


def pull_of(job: Job) -> int:
    """The pull request a follow-up is about."""
    return job.details.pull_request or job.issue


def gate(job: Job, gh: GitHubGateway) -> JobOutcome | None:
    """A follow-up runs only on the App's PR for its issue, and a `ci` one only for the App's own commit that is
    still the PR's head; None lets the job go on."""
    if job.kind not in FOLLOWUPS:
        return None
    if job.kind == JobKind.CI and job.requester != (bot := gh.bot_identity().name):  # the App's exact login
        return JobOutcome(JobStatus.CANCELLED, error=f"ci follow-up: sent by {job.requester}, not the App ({bot})")
    pr = gh.get_pr(pull_of(job))
    if pr.head != f"mini-fix/issue-{job.issue}":
        return JobOutcome(JobStatus.CANCELLED, error=f"follow-up: #{pr.number} is not the App's PR for the issue")
    if job.kind == JobKind.CI and pr.head_sha and pr.head_sha != job.details.head_sha:
        return JobOutcome(JobStatus.CANCELLED, error="ci follow-up: the pull request has a newer head commit")
    return None


def requester_role(job: Job, gh: GitHubGateway) -> str:
    """The requester's role; a `ci` follow-up's requester is the App itself (`gate` checked), which may run it."""
    return "write" if job.kind == JobKind.CI else gh.permission(job.requester)


def ci_limit(config: RepoConfig, settings: Settings) -> int:
    """CI follow-ups allowed per PR between a person's runs: the repository's, within the operator's ceiling."""
    wanted = DEFAULT_CI_FOLLOWUPS if config.ci_followups is None else config.ci_followups
    return min(wanted, settings.max_ci_followups)


def ci_done(jobs: list[Job], job_id: str) -> int:
    """CI follow-ups that ran since the issue's last fix, retry or review follow-up (a person's word resets it)."""
    done = 0
    for job in jobs:
        if job.kind in (JobKind.FIX, JobKind.RETRY, JobKind.REVIEW):
            done = 0
        elif job.kind == JobKind.CI and job.id != job_id and job.status in RAN:
            done += 1
    return done


def prepare(
    job: Job, gh: GitHubGateway, config: RepoConfig, settings: Settings, issue_jobs: IssueJobs | None
) -> Job | JobOutcome:
    """The follow-up with its new information read (CI failures or the review), or how it ends before a run."""
    if job.kind == JobKind.CI:
        return _prepare_ci(job, gh, config, settings, issue_jobs)
    if job.kind == JobKind.REVIEW:
        return _prepare_review(job, gh, settings)
    return job


def _prepare_ci(
    job: Job, gh: GitHubGateway, config: RepoConfig, settings: Settings, issue_jobs: IssueJobs | None
) -> Job | JobOutcome:
    pull, limit = pull_of(job), ci_limit(config, settings)
    done = ci_done(issue_jobs(job.repo, job.issue), job.id) if issue_jobs is not None else 0
    if done >= limit:
        source = "`ci_followups` in .github/mini-fix.yml" if config.ci_followups is not None else "the default"
        gh.create_comment(pull, render("followup_comment.md", kind="bound", done=done, limit=limit, source=source))
        log.info("ci_followup_bound", done=done, limit=limit)
        return JobOutcome(JobStatus.CANCELLED, error=f"ci_followups: {done} done, the limit is {limit}")
    sha = job.details.head_sha
    evidence = read_evidence(gh, sha, settings.secrets)
    if not evidence.failures and evidence.unread:
        gh.create_comment(pull, render("followup_comment.md", kind="unread", notes=list(evidence.unread)))
        return JobOutcome(JobStatus.FAILED, error="ci follow-up: could not read the failure")
    if not evidence.failures:
        return JobOutcome(JobStatus.CANCELLED, error="ci follow-up: no failing check run on the commit any more")
    text = render("followup_ci.md", pull=pull, sha=sha, failures=list(evidence.failures), unread=list(evidence.unread))
    return replace(job, details=replace(job.details, followup_task=cap(text, MAX_FOLLOWUP_CHARS)))


def _prepare_review(job: Job, gh: GitHubGateway, settings: Settings) -> Job | JobOutcome:
    review = gh.get_review(pull_of(job), job.details.review_id or 0)
    if review.author.casefold() != job.requester.casefold():
        return JobOutcome(JobStatus.CANCELLED, error=f"review follow-up: the review is @{review.author}'s")
    if not review.body.strip() and not review.comments:
        return JobOutcome(JobStatus.CANCELLED, error="review follow-up: the review says nothing to address")
    comments = _comments(review, settings)
    text = render(
        "followup_review.md",
        pull=pull_of(job),
        reviewer=review.author,
        body=quoted(review.body, MAX_REVIEW_BODY_CHARS, settings.secrets) if review.body.strip() else "",
        comments=comments,
    )
    addressed = tuple(AddressedComment(c["n"], c["path"], c["line"], c["first"]) for c in comments)
    details = replace(job.details, followup_task=cap(text, MAX_FOLLOWUP_CHARS), followup_addressed=addressed)
    return replace(job, details=details)


class _Comment(TypedDict):
    """One review comment as `followup_review.md` shows it to the agent."""

    n: int
    path: str
    line: int | None
    hunk: str
    body: str
    first: str


def _comments(review: Review, settings: Settings) -> list[_Comment]:
    found: list[_Comment] = []
    for n, c in enumerate(review.comments[:MAX_REVIEW_COMMENTS], start=1):
        body = plain(c.body, settings.secrets)
        found.append(
            {
                "n": n,
                "path": " ".join(plain(c.path, settings.secrets).replace("`", "'").split())[:200],
                "line": c.line,
                "hunk": quoted(c.diff_hunk, MAX_HUNK_CHARS, settings.secrets) if c.diff_hunk.strip() else "",
                "body": quoted(c.body, MAX_REVIEW_BODY_CHARS, settings.secrets),
                "first": (body.strip().splitlines() or [""])[0],
            }
        )
    return found


def run_note(job: Job) -> str:
    """What the status comment says started a follow-up ("" for other jobs)."""
    if job.kind == JobKind.CI:
        return f"CI failed on #{pull_of(job)}"
    if job.kind == JobKind.REVIEW:
        return f"changes requested on #{pull_of(job)} by @{job.requester}"
    return ""


def task_text(job: Job) -> str:
    """The follow-up's new information for its task ("" for other jobs)."""
    return job.details.followup_task


def answer(job: Job, gh: GitHubGateway, run_id: str) -> None:
    """After a review follow-up pushed: one comment on the PR listing the review comments it worked on."""
    if job.kind != JobKind.REVIEW:
        return
    comments = list(job.details.followup_addressed)
    body = render("followup_comment.md", kind="addressed", reviewer=job.requester, run_id=run_id, comments=comments)
    gh.create_comment(pull_of(job), body)
