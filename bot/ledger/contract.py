"""The ledger's contract: the Protocol every driver matches and what a submit returns. Imports no driver."""

from __future__ import annotations

import builtins
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.jobs import InstallationChange, Job, JobRequest, JobStatus, PrEvent
from bot.ledger.fair import ClaimPolicy
from bot.ledger.usage import Usage


@dataclass(frozen=True)
class SubmitResult:
    """The job a trigger recorded (or found, for a redelivery) and the jobs it displaced."""

    job: Job
    created: bool
    superseded: list[Job] = field(default_factory=list)
    cancelled: list[Job] = field(default_factory=list)
    replayed: bool = False  # the same signed body already recorded `job` under another delivery id


class Ledger(Protocol):
    """Durable job records. Writes are idempotent; at most one queued or running job per issue; asks that come
    while it is active wait (`waiting`) and are folded into the issue's next run.

    An issue is (forge, repo, number): the same path may exist on GitHub and on GitLab, of different owners. Every
    read or write that names a repository or an issue takes an `installation_id` whose sign (bot/forge_ids.py)
    says the forge; the installation itself is not matched (a reinstalled App's older jobs are still the issue's)."""

    def submit_nowait(self, req: JobRequest) -> Future[SubmitResult]:
        """Record a job; the future resolves once the row is committed."""
        ...

    def submit(self, req: JobRequest) -> SubmitResult:
        """Record a job and wait for the commit."""
        ...

    def cancel(
        self, repo: str, issue: int, reason: str, *, installation_id: int, on_pull_request: bool = False
    ) -> list[Job]:
        """Cancel the issue's queued or running job (on the forge of `installation_id`); returns the jobs stopped."""
        ...

    def take_over(self, job_id: str) -> SubmitResult | None:
        """A writer's waiting `/agent retry` becomes the issue's queued run: the running run cancelled, a queued one
        back to waiting (folded into the retry's run); None when the retry no longer waits."""
        ...

    def waiting_asks(self, repo: str, issue: int, *, installation_id: int) -> builtins.list[Job]:
        """The issue's asks (fix, retry, ci, review) waiting for its next run, oldest first."""
        ...

    def waiting_retries(self) -> builtins.list[Job]:
        """Every waiting `/agent retry`, oldest first."""
        ...

    def settle_ask(self, job_id: str, status: JobStatus, error: str) -> bool:
        """End a waiting ask (folded into a run, denied, cancelled); False when it no longer waits."""
        ...

    def promote(self, repo: str, issue: int, *, installation_id: int) -> Job | None:
        """The issue's oldest waiting ask queued as its next run, when the issue has no active run; else None."""
        ...

    def promote_idle(self) -> builtins.list[Job]:
        """`promote` on every issue that has waiting asks and no active run; the jobs queued."""
        ...

    def record_installation(self, change: InstallationChange) -> list[Job]:
        """Record an installation event; returns the jobs it cancelled (deleted or suspended)."""
        ...

    def record_pr_event(self, event: PrEvent) -> None:
        """Record what happened to one of mini-fix's PRs (closed, merged, a person's push, a review); an event for
        a PR no job of the ledger recorded is ignored."""
        ...

    def pr_outcomes(self) -> dict[tuple[str, int], dict[str, Any]]:
        """Every recorded PR's outcome, by (repo, PR number); reviews counted only once settled as a writer's."""
        ...

    def unchecked_reviews(self, limit: int = 50) -> builtins.list[PrEvent]:
        """The oldest reviews of mini-fix's PRs whose author's permission is still to be asked (at most `limit`)."""
        ...

    def settle_review(self, review: PrEvent, permission: str, counts: bool) -> bool:
        """Record the reviewer's permission ("" when GitHub could not say) and count the verdict when `counts`;
        False when the review was settled already."""
        ...

    def installation_active(self, installation_id: int) -> bool:
        """False when the installation was deleted or is suspended (new triggers for it are ignored)."""
        ...

    def trigger_label(self, repo: str, *, installation_id: int) -> str | None:
        """The trigger label a worker last read from the repository's (or its owner's) config; None = default."""
        ...

    def remember_label(self, key: str, label: str | None, *, installation_id: int) -> None:
        """Cache the trigger label of `owner/name`, or of an owner as `owner/*` (None forgets it)."""
        ...

    def take_label_chore(self) -> tuple[int, str] | None:
        """The oldest (installation id, owner/name) still needing its trigger label, removed from the list."""
        ...

    def count_jobs(self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None) -> int:
        """Fix and retry jobs of an installation in `status` (queue-full ones and one issue's left out)."""
        ...

    def get(self, job_id: str) -> Job | None:
        """One job, or None."""
        ...

    def list(self, limit: int = 50) -> builtins.list[Job]:
        """The newest jobs first."""
        ...

    def issue_jobs(self, repo: str, issue: int, *, installation_id: int) -> builtins.list[Job]:
        """Every job of one issue (control jobs left out), oldest first."""
        ...

    def claim(self, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
        """Take a queued job, or a running one whose lease expired; None when it is not claimable."""
        ...

    def claim_next(self, worker_id: str, lease_seconds: float, policy: ClaimPolicy) -> Job | None:
        """Take the fairest claimable run (bot/ledger/fair.py), the running cap checked in the same transaction;
        None when nothing is claimable."""
        ...

    def record_usage_nowait(self, use: Usage) -> Future[bool]:
        """Write one claim's usage totals; a newer version only, never over a final row (bot/ledger/usage.py)."""
        ...

    def record_usage(self, use: Usage) -> bool:
        """`record_usage_nowait`, waiting for the commit."""
        ...

    def usage_totals(
        self, by: builtins.list[str], *, since: str = "", installation_id: int | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Usage summed by `by` (repo, installation, day) from the UTC day `since` on; by repo, each forge's apart (a
        GitLab project's `repo` is `gitlab:group/project`, bot/ledger/usage.py)."""
        ...

    def followups_started(
        self, installation_id: int, job_id: str, since: float, issue: tuple[str, int] | None = None
    ) -> int:
        """CI and review follow-ups started from `since` (epoch s), other than `job_id`: the installation's, or with
        `issue` that issue's on the installation's forge."""
        ...

    def job_usage(self, job_id: str) -> builtins.list[Usage]:
        """A job's usage rows, one per claim."""
        ...

    def renew(self, job_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease; False when the job was stopped and its run must end."""
        ...

    def mark_ran(self, job_id: str, worker_id: str) -> bool:
        """Record that the job's run started (`JobDetails.ran`); False if not held by worker_id."""
        ...

    def finish(
        self,
        job_id: str,
        worker_id: str,
        status: JobStatus,
        *,
        pr_url: str | None = None,
        run_id: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Record a run's end; a cancelled job stays cancelled; False if not held by worker_id."""
        ...

    def requeue(self, job_id: str, worker_id: str) -> bool:
        """Put a running job back in the queue without spending an attempt (worker shutting down)."""
        ...

    def defer(self, job_id: str, worker_id: str, until: float, error: str, *, spent: bool = True) -> bool:
        """Put a running job back in the queue, claimable from `until` (epoch s); its attempt stays spent, unless
        `spent` is False (a quota wait, where nothing ran): then its claim count is as before this claim."""
        ...

    def expired(self, now: float) -> builtins.list[Job]:
        """Running jobs whose lease ended before `now` (epoch seconds)."""
        ...

    def queued_ids(self, *, control: bool = False) -> builtins.list[str]:
        """Ids of every queued job that may run now (only `/agent` control jobs with control=True), oldest first."""
        ...

    def fleet(self) -> tuple[dict[str, int], float | None]:
        """Jobs by status across every worker, and the oldest queued job's creation time (epoch s, or None)."""
        ...

    def is_cancelled(self, job_id: str) -> bool:
        """True when the job was cancelled or superseded."""
        ...

    def close(self) -> None:
        """Release connections and threads."""
        ...
