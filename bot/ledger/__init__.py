"""The job ledger: the truth about every job. The queue only carries job ids; this decides who runs what."""

from __future__ import annotations

import builtins
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bot.jobs import Job, JobRequest, JobStatus
from bot.settings import Settings, SettingsError
from bot.webhooks.decision import InstallationChange

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class SubmitResult:
    """The job a trigger recorded (or found, for a redelivery) and the jobs it displaced."""

    job: Job
    created: bool
    superseded: list[Job] = field(default_factory=list)
    cancelled: list[Job] = field(default_factory=list)


class Ledger(Protocol):
    """Durable job records. Writes are idempotent; at most one queued or running job per (repo, issue)."""

    def submit_nowait(self, req: JobRequest) -> Future[SubmitResult]:
        """Record a job; the future resolves once the row is committed."""
        ...

    def submit(self, req: JobRequest) -> SubmitResult:
        """Record a job and wait for the commit."""
        ...

    def cancel(self, repo: str, issue: int, reason: str, *, on_pull_request: bool = False) -> list[Job]:
        """Cancel the issue's queued or running job; returns the jobs stopped."""
        ...

    def record_installation(self, change: InstallationChange) -> list[Job]:
        """Record an installation event; returns the jobs it cancelled (deleted or suspended)."""
        ...

    def installation_active(self, installation_id: int) -> bool:
        """False when the installation was deleted or is suspended (new triggers for it are ignored)."""
        ...

    def trigger_label(self, repo: str) -> str | None:
        """The trigger label a worker last read from the repository's (or its owner's) config; None = default."""
        ...

    def remember_label(self, key: str, label: str | None) -> None:
        """Cache the trigger label of `owner/name`, or of an owner as `owner/*` (None forgets it)."""
        ...

    def take_label_chore(self) -> tuple[int, str] | None:
        """The oldest (installation id, owner/name) still needing its trigger label, removed from the list."""
        ...

    def count_jobs(
        self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None
    ) -> int:
        """Fix and retry jobs of an installation in `status` (queue-full ones and one issue's left out)."""
        ...

    def get(self, job_id: str) -> Job | None:
        """One job, or None."""
        ...

    def list(self, limit: int = 50) -> builtins.list[Job]:
        """The newest jobs first."""
        ...

    def claim(self, job_id: str, worker_id: str, lease_seconds: float) -> Job | None:
        """Take a queued job, or a running one whose lease expired; None when it is not claimable."""
        ...

    def renew(self, job_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease; False when the job was stopped and its run must end."""
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

    def expired(self, now: float) -> builtins.list[Job]:
        """Running jobs whose lease ended before `now` (epoch seconds)."""
        ...

    def queued_ids(self) -> builtins.list[str]:
        """Ids of every queued job, oldest first."""
        ...

    def is_cancelled(self, job_id: str) -> bool:
        """True when the job was cancelled or superseded."""
        ...

    def close(self) -> None:
        """Release connections and threads."""
        ...


def sqlite_path(database_url: str) -> Path:
    """The file of a sqlite:/// URL, or a SettingsError naming MINIFIX_DATABASE_URL."""
    prefix = "sqlite:///"
    if not database_url.startswith(prefix):
        raise SettingsError(
            f"MINIFIX_DATABASE_URL={database_url.split('://')[0]}://... is not supported: "
            "use sqlite:///PATH (the default, in MINIFIX_DATA_DIR) or postgresql://USER:PASSWORD@HOST/DB."
        )
    return Path(database_url[len(prefix) :])


def is_postgres(database_url: str) -> bool:
    """True for a postgresql:// (or postgres://) URL."""
    return database_url.startswith(POSTGRES_SCHEMES)


def open_ledger(settings: Settings) -> Ledger:
    """The ledger named by settings.database_url: PostgreSQL for a postgresql:// URL, else a SQLite file."""
    url = settings.database_url or ""
    if is_postgres(url):
        from bot.ledger.postgres.ledger import PostgresLedger

        return PostgresLedger(url)
    from bot.ledger.sqlite.ledger import SqliteLedger

    path = sqlite_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteLedger(path)
