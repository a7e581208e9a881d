"""The ledger's hooks a job's pipeline calls, bound to the job's forge.

The pipeline names an issue by (repo, number), as GitHub does. The ledger needs the forge too: the same path may
exist on GitHub and on GitLab, of different owners, and a GitLab `/agent stop` must never cancel the GitHub run of
the issue with the same path and number. Each job's hooks carry its installation id, whose sign says the forge.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.jobs import Job
from bot.ledger.contract import Ledger
from bot.pipeline.admit.control import StopRuns
from bot.pipeline.admit.gate import RememberLabel
from bot.pipeline.task.asks import AskLedger
from bot.pipeline.task.followup import IssueJobs


@dataclass(frozen=True)
class JobHooks:
    """`PipelineDeps`' ledger hooks of one forge (all None: a worker built without a ledger)."""

    stop_runs: StopRuns | None = None
    remember_label: RememberLabel | None = None
    issue_jobs: IssueJobs | None = None
    asks: AskLedger | None = None


def job_hooks(ledger: Ledger | None, installation_id: int) -> JobHooks:
    """The hooks of a job of `installation_id`: every read and write stays on that installation's forge."""
    if ledger is None:
        return JobHooks()

    def stop_runs(repo: str, issue: int, reason: str) -> list[Job]:
        return ledger.cancel(repo, issue, reason, installation_id=installation_id)

    def remember_label(key: str, label: str | None) -> None:
        ledger.remember_label(key, label, installation_id=installation_id)

    def issue_jobs(repo: str, issue: int) -> list[Job]:
        return ledger.issue_jobs(repo, issue, installation_id=installation_id)

    def waiting(repo: str, issue: int) -> list[Job]:
        return ledger.waiting_asks(repo, issue, installation_id=installation_id)

    return JobHooks(stop_runs, remember_label, issue_jobs, AskLedger(waiting, ledger.settle_ask))
