"""`ci` and `review` follow-ups in the worker: may one run, what new information its task gets, what it answers
(each kind's object, `kinds.py`, calls what here is its own).

A follow-up is a job like any other (status comment, ledger, trajectory, `/agent stop`); this module adds what is
its own. Everything it reads from CI or a review is untrusted: quoted through `bot.pipeline.task.untrusted`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypedDict

import structlog

from bot.github.gateway import GitHubGateway, PullRequest, RateLimited, Review
from bot.jobs import AddressedAsk, AddressedComment, Job, JobKind, JobOutcome, JobStatus
from bot.pipeline.runconfig import ci_limit
from bot.pipeline.task.ci_evidence import CiEvidence, read_evidence
from bot.pipeline.task.issue import MAX_GUIDANCE_CHARS, cap, clean
from bot.pipeline.task.untrusted import plain, quoted
from bot.render import render
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings

FOLLOWUPS = (JobKind.CI, JobKind.REVIEW)
MAX_FOLLOWUP_CHARS = 16_000
MAX_REVIEW_BODY_CHARS = 3_000
MAX_HUNK_CHARS = 1_500
MAX_REVIEW_COMMENTS = 20
RAN = (JobStatus.SUCCEEDED, JobStatus.FAILED)
NO_OPEN_PR = "ci follow-up: no open pull request from the issue's branch"
IssueJobs = Callable[[str, int], list[Job]]  # (repo, issue) -> its jobs, oldest first (Ledger.issue_jobs)

log = structlog.get_logger(__name__)


def pull_of(job: Job) -> int:
    """The pull request a follow-up is about."""
    return job.details.pull_request or job.issue


def locate(job: Job, gh: GitHubGateway) -> Job | None:
    """The job with the PR it is about: a CI follow-up that names none (a GitLab branch pipeline's hook names no
    merge request) is about the open PR from the issue's branch, looked up now; None when there is none (it was
    closed or merged: nothing to follow up, and nowhere to say so)."""
    if job.kind != JobKind.CI or job.details.pull_request is not None:
        return job
    branch = f"mini-fix/issue-{job.issue}"
    pr = gh.find_open_pr(branch)
    if pr is None:
        log.info("ci_followup_skipped", why="no open pull request from the branch", branch=branch)
        return None
    return replace(job, details=replace(job.details, pull_request=pr.number))


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
    if (ended := pr_ended(job, pr, gh, when="before this follow-up started")) is not None:
        return JobOutcome(JobStatus.CANCELLED, error=f"follow-up: #{pr.number} was {ended}")
    if job.kind == JobKind.CI and pr.head_sha and pr.head_sha != job.details.head_sha:
        if job.attempts <= 1:  # a resumed one's newer commit may be its own push; its status comment says it
            why = render("followup_comment.md", kind="skipped", why="newer", sha=job.details.head_sha[:12])
            gh.create_comment(pr.number, why)
        log.info("ci_followup_skipped", why="newer head commit", sha=job.details.head_sha)
        return JobOutcome(JobStatus.CANCELLED, error="ci follow-up: the pull request has a newer head commit")
    return None


def pr_ended(job: Job, pr: PullRequest, gh: GitHubGateway, *, when: str) -> str | None:
    """ "merged" or "closed" when a follow-up's PR is no longer open (said once on the PR); None while it is open."""
    if job.kind not in FOLLOWUPS or pr.state == "open":
        return None
    ask = "CI fix" if job.kind == JobKind.CI else "review's changes"
    gh.create_comment(pr.number, render("followup_comment.md", kind="closed", merged=pr.merged, when=when, ask=ask))
    log.info("followup_pr_ended", pull=pr.number, merged=pr.merged, when=when)
    return "merged" if pr.merged else "closed"


def recheck_pr(job: Job, gh: GitHubGateway) -> str | None:
    """After the run, before its push: "merged" or "closed" when the follow-up's PR ended while it worked."""
    if job.kind not in FOLLOWUPS:
        return None
    return pr_ended(job, gh.get_pr(pull_of(job)), gh, when="while this run worked")


def ci_done(jobs: list[Job], job_id: str) -> int:
    """CI follow-ups that ran since the issue's last run carrying a person's ask (a person's word resets it): a
    denied or cancelled ask, a CI failure folded into another run, and one that failed before its run started (a
    GitHub error, a failed clone: `JobDetails.ran` unset) change nothing. Each job row counts once, however often
    its run was resumed."""
    done = 0
    for job in jobs:
        if job.kind in (JobKind.FIX, JobKind.RETRY, JobKind.REVIEW) and job.status in (*RAN, JobStatus.FOLDED):
            done = 0
        elif job.kind == JobKind.CI and job.id != job_id and _ran(job):
            done += 1
    return done


def _ran(job: Job) -> bool:
    """A CI follow-up whose run started: it succeeded (it pushed), or it failed after the ledger marked it ran."""
    return job.status == JobStatus.SUCCEEDED or (job.status == JobStatus.FAILED and job.details.ran)


def prepare(
    job: Job,
    gh: GitHubGateway,
    config: RepoConfig,
    settings: Settings,
    issue_jobs: IssueJobs | None,
    carried: Sequence[Job] = (),
) -> Job | JobOutcome:
    """The run's job with every ask's new information read (the latest CI failure, each review, each retry's
    guidance) into its task, or how it ends before a run (a CI failure alone past its bound, or unreadable)."""
    asks = [job, *carried]
    people = [a for a in asks if a.kind != JobKind.CI]
    parts: list[str] = []
    answered: list[AddressedAsk] = []
    if latest := next((a for a in reversed(asks) if a.kind == JobKind.CI), None):
        ci = _prepare_ci(latest, gh, config, settings, issue_jobs, alone=not people)
        if isinstance(ci, JobOutcome):
            if not people:
                return ci
        else:
            parts.append(ci[0])
            answered.append(ci[1])
    for ask in people:
        read = _prepare_person(ask, job, gh, settings)
        if isinstance(read, JobOutcome):
            if ask is job and not carried:
                return read
            continue
        parts += [read[0]] if read[0] else []
        answered.append(read[1])
    if job.kind not in FOLLOWUPS and not carried:
        return job
    details = replace(
        job.details, followup_task=cap("\n\n".join(parts), MAX_FOLLOWUP_CHARS), followup_asks=tuple(answered)
    )
    return replace(job, details=details)


def _prepare_ci(
    job: Job, gh: GitHubGateway, config: RepoConfig, settings: Settings, issue_jobs: IssueJobs | None, *, alone: bool
) -> tuple[str, AddressedAsk] | JobOutcome:
    """The latest CI failure's text; alone (no person's ask with it) it is bounded and must be readable."""
    pull, limit = pull_of(job), ci_limit(config, settings)
    done = ci_done(issue_jobs(job.repo, job.issue), job.id) if issue_jobs is not None else 0
    if alone and done >= limit:
        source = "`ci_followups` in .github/mini-fix.yml" if config.ci_followups is not None else "the default"
        gh.create_comment(pull, render("followup_comment.md", kind="bound", done=done, limit=limit, source=source))
        log.info("ci_followup_bound", done=done, limit=limit)
        return JobOutcome(JobStatus.CANCELLED, error=f"ci_followups: {done} done, the limit is {limit}")
    sha = job.details.head_sha
    try:
        evidence = read_evidence(gh, sha, settings.secrets)
    except RateLimited as exc:
        if alone:  # nothing else to run: the job goes back to the queue by GitHub's wait, uncounted
            raise
        # people's asks were folded into this run already: they go on, with the rate limit named
        evidence = CiEvidence((), (f"the check runs: GitHub's rate limit refused the read ({exc})",))
    if not evidence.failures and evidence.unread:
        if alone:
            gh.create_comment(pull, render("followup_comment.md", kind="unread", notes=list(evidence.unread)))
        # not run, so not counted toward `ci_followups` (`ci_done` counts runs): cancelled, not failed
        return JobOutcome(JobStatus.CANCELLED, error="ci follow-up: not run, could not read the failure")
    if not evidence.failures:
        if alone:  # e.g. a re-run turned green meanwhile: said on the PR, never silently dropped
            gh.create_comment(pull, render("followup_comment.md", kind="skipped", why="green", sha=sha[:12]))
        log.info("ci_followup_skipped", why="no failing check run", sha=sha)
        return JobOutcome(JobStatus.CANCELLED, error="ci follow-up: no failing check run on the commit any more")
    text = render("followup_ci.md", pull=pull, sha=sha, failures=list(evidence.failures), unread=list(evidence.unread))
    names = ", ".join(f"`{f.name}`" for f in evidence.failures)
    return text, AddressedAsk("ci", job.requester, f"{names} on `{sha[:12]}`")


def _prepare_person(
    ask: Job, lead: Job, gh: GitHubGateway, settings: Settings
) -> tuple[str, AddressedAsk] | JobOutcome:
    """A person's ask: a review read through the API, a retry's guidance (the lead's own is the task's already)."""
    if ask.kind == JobKind.REVIEW:
        return _prepare_review(ask, gh, settings)
    guidance = cap(clean(ask.guidance), MAX_GUIDANCE_CHARS)
    first = (guidance.strip().splitlines() or [""])[0]
    if ask.kind != JobKind.RETRY:
        return "", AddressedAsk(ask.kind.value, ask.requester, "the trigger label")
    if ask is lead or not guidance.strip():
        return "", AddressedAsk(ask.kind.value, ask.requester, first)
    text = f"## @{ask.requester} also asked (`/agent retry`)\n\n{guidance}"
    return text, AddressedAsk(ask.kind.value, ask.requester, first)


def _prepare_review(job: Job, gh: GitHubGateway, settings: Settings) -> tuple[str, AddressedAsk] | JobOutcome:
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
    first = (plain(review.body, settings.secrets).strip().splitlines() or [""])[0]
    return text, AddressedAsk("review", review.author, first, addressed)


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
    """What the status comment says started a run that carries follow-up asks ("" for a plain run)."""
    asks = job.details.followup_asks
    if not asks:
        return ""
    return "; ".join(_describe(a, pull_of(job)) for a in asks)


def _describe(ask: AddressedAsk, pull: int) -> str:
    if ask.kind == "ci":
        return f"CI failed on #{pull}"
    if ask.kind == "review":
        return f"changes requested on #{pull} by @{ask.requester}"
    return f"`/agent {ask.kind}` by @{ask.requester}" if ask.kind == "retry" else f"the label, by @{ask.requester}"


def task_text(job: Job) -> str:
    """The carried asks' new information for the task ("" for a plain run)."""
    return job.details.followup_task


def answer(job: Job, gh: GitHubGateway, run_id: str) -> None:
    """After a run that carried a review or several asks pushed: one PR comment saying what it was given, per ask."""
    asks = list(job.details.followup_asks)
    if not any(a.kind == "review" for a in asks) and len(asks) < 2:
        return
    gh.post_comment(pull_of(job), render("followup_comment.md", kind="addressed", run_id=run_id, asks=asks))
