"""The types every stage shares: the job the webhook path records and the worker runs, the cancel and installation
requests, the outcome of a run. Imports nothing of the App."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import NotRequired, TypedDict

from bot.job_details import AddressedAsk, AddressedComment, JobDetails

__all__ = ["AddressedAsk", "AddressedComment", "JobDetails"]  # shared types, kept in bot/job_details.py; the rest below


class JobKind(StrEnum):
    FIX = "fix"
    RETRY = "retry"
    HELP = "help"  # reply with the commands (after a permission check)
    STOP = "stop"  # cancel the issue's run (after a permission check)
    CI = "ci"  # follow-up on a failed check suite of the App's own commit on its PR
    REVIEW = "review"  # follow-up on a writer's review (changes requested or inline comments) of the App's PR

    @property
    def is_control(self) -> bool:
        """Control jobs act on an issue's run; they neither count as its active job nor supersede it."""
        return self in (JobKind.HELP, JobKind.STOP)

    @property
    def builds_on_pr(self) -> bool:
        """Retries and follow-ups start from the PR's current head and add commits on top of it."""
        return self in (JobKind.RETRY, JobKind.CI, JobKind.REVIEW)


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DENIED = "denied"
    SUPERSEDED = "superseded"
    WAITING = "waiting"  # an ask that came while the issue had an active run: folded into its next run
    FOLDED = "folded"  # an ask carried by another job's run (its `error` names that job)

    @property
    def active(self) -> bool:
        return self in (JobStatus.QUEUED, JobStatus.RUNNING)


@dataclass
class Job:
    """One row of the job ledger."""

    id: str
    kind: JobKind
    installation_id: int
    repo: str  # owner/name
    issue: int
    requester: str
    delivery_id: str
    status: JobStatus = JobStatus.QUEUED
    guidance: str = ""  # extra guidance from `/agent retry <guidance>`
    comment_id: int | None = None  # the comment that triggered a retry, for the 👀 reaction
    attempts: int = 0
    lease_expires_at: datetime | None = None
    worker_id: str | None = None
    pr_url: str | None = None
    run_id: str | None = None
    error: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    details: JobDetails = field(default_factory=JobDetails)

    @property
    def owner(self) -> str:
        return self.repo.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repo.split("/", 1)[1]


@dataclass(frozen=True)
class JobRequest:
    """A job a webhook asks for, before the ledger gives it an id and a row."""

    kind: JobKind
    installation_id: int
    repo: str  # owner/name
    issue: int  # a PR number when details.on_pull_request and the ledger could not map it to its issue
    requester: str
    delivery_id: str
    guidance: str = ""
    comment_id: int | None = None
    details: JobDetails = field(default_factory=JobDetails)
    # sha256 of the signed body (hex), "" when no webhook asked: one body records at most one job, on any replica
    body_digest: str = ""


class CancelSignal(threading.Event):
    """A run's cancel flag that also says why it was set (e.g. `/agent stop by @alice`)."""

    def __init__(self) -> None:
        super().__init__()
        self.reason = ""

    def cancel(self, reason: str) -> None:
        """Set the flag, keeping the first reason given."""
        self.reason = self.reason or reason
        self.set()


SHUTDOWN_REASON = "the worker is shutting down"
"""The cancel reason of a run whose worker stops (SIGTERM): the job goes back to the queue, it is not over."""


def cancel_reason(cancel: threading.Event) -> str:
    """Why a run's cancel flag was set, when it says."""
    return cancel.reason if isinstance(cancel, CancelSignal) else ""


class Outcome(StrEnum):
    """How a run ends; each member has its texts and reaction in prompts/outcomes.yaml (a test keeps them equal)."""

    PR_OPENED = "pr_opened"
    PR_UPDATED = "pr_updated"
    DUPLICATE_PR = "duplicate_pr"  # another open PR already fixes the issue: linked, not duplicated
    PR_ENDED = "pr_ended"  # a follow-up's PR was closed or merged while it worked: nothing pushed
    EMPTY_DIFF = "empty_diff"
    NO_ACCEPTABLE_ATTEMPT = "no_acceptable_attempt"  # several attempts, none of them may be proposed
    PROTECTED_PATHS = "protected_paths"
    LIMITS = "limits"
    QUOTA = "quota"  # a spend quota (MINIFIX_QUOTA_*: tokens, cost, model-seconds) was reached mid-run
    FORMAT_ERRORS = "format_errors"
    CONTEXT_WINDOW = "context_window"
    MODEL_UNAVAILABLE = "model_unavailable"
    AGENT_CRASHED = "agent_crashed"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    IMAGE_MISSING = "image_missing"
    SANDBOX_FAILED = "sandbox_failed"
    SETUP_FAILED = "setup_failed"
    CLONE_FAILED = "clone_failed"
    PUSH_FAILED = "push_failed"
    GITHUB_FAILED = "github_failed"
    GITHUB_RATE_LIMITED = "github_rate_limited"  # GitHub's rate limit outlasted every attempt of the job
    CANCELLED = "cancelled"
    REQUEUED = "requeued"
    WORKER_LOST = "worker_lost"


class RunInfo(TypedDict):
    """What the comments and the PR say about one run; the pipeline adds what it learns (exit status, stop reason)."""

    run_id: str
    model: str
    profile: NotRequired[str]  # the agent profile the model ran with (bot/agent/profiles.py)
    requester: str
    retry: bool
    exit_status: str
    stop_reason: NotRequired[str]
    clamped: NotRequired[list[str]]  # the repository's config values the operator's ceilings lowered or refused
    notes: NotRequired[list[str]]  # where the change went when that is not the usual (a moved branch or base)
    setup: NotRequired[str]  # what the repository's setup did: `ran in 41 s`, `restored from cache in 2 s`
    setup_from: NotRequired[str]  # which setup commands, and why: the repository's own or inferred from its files
    followup: NotRequired[str]  # what started a follow-up (`CI failed on #9`), for the status comment
    tests: NotRequired[str]  # the test command the App runs, and why (configured or inferred)


@dataclass(frozen=True)
class JobOutcome:
    """What the pipeline reports when a job's run ends."""

    status: JobStatus
    pr_url: str | None = None
    run_id: str | None = None
    error: str | None = None
    retry_in: float | None = None  # with status QUEUED: run again no sooner than this many seconds from now
    # With retry_in: False where nothing of the run started (a quota wait), so the claim is given back and a run
    # that waits through many windows never uses up MINIFIX_MAX_CLAIMS; a rate-limit deferral keeps it spent.
    claim_spent: bool = True


@dataclass(frozen=True)
class CancelRequest:
    """Stop the queued or running job of one issue (or of the PR mini-fix opened for it)."""

    installation_id: int
    repo: str
    issue: int
    by: str
    reason: str
    on_pull_request: bool = False


@dataclass(frozen=True)
class InstallationChange:
    """An installation event to record; deleted or suspended installations lose their jobs."""

    installation_id: int
    action: str
    account: str
    repositories_added: tuple[str, ...] = ()
    repositories_removed: tuple[str, ...] = ()

    @property
    def stops_jobs(self) -> bool:
        return self.action in ("deleted", "suspend")


REVIEW_STATES = ("approved", "changes_requested", "commented")
"""Review verdicts recorded on mini-fix's PRs (GitHub's review states, lower-cased; `dismissed` is not one)."""


@dataclass(frozen=True)
class PrEvent:
    """One thing that happened to a mini-fix PR: closed (merged or not), reopened, a person's push, a review."""

    installation_id: int
    repo: str
    pull: int
    kind: str  # closed | reopened | human_push | review
    by: str
    merged: bool = False
    review: str = ""  # one of REVIEW_STATES
    review_id: int | None = None  # a review's GitHub id: one verdict per review, whatever GitHub redelivers
