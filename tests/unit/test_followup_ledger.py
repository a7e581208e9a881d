"""The ledger treats `ci` and `review` follow-ups as an issue's runs: one active at a time, later asks wait for it
(never cancel it); older ledgers migrate."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger

OLD_INDEX = (
    "CREATE UNIQUE INDEX jobs_one_active_run ON jobs (repo, issue) "
    "WHERE status IN ('queued', 'running') AND kind IN ('fix', 'retry')"
)


INST = 7


def _req(kind: JobKind, delivery: str, issue: int = 3) -> JobRequest:
    return JobRequest(kind, INST, "acme/w", issue, "ada", delivery)


def test_follow_ups_wait_for_the_issues_run_and_stop_cancels_them_all(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "l.db")
    try:
        fix = ledger.submit(_req(JobKind.FIX, "d1")).job
        ci = ledger.submit(_req(JobKind.CI, "ci:acme/w:9:abc"))
        assert ci.created and ci.job.status == JobStatus.WAITING and not ci.superseded and not ci.cancelled
        review = ledger.submit(_req(JobKind.REVIEW, "review:acme/w:9:1"))
        assert review.job.status == JobStatus.WAITING and ledger.get(fix.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
        kinds = [j.kind for j in ledger.issue_jobs("acme/w", 3, installation_id=INST)]
        assert kinds == [JobKind.FIX, JobKind.CI, JobKind.REVIEW]
        stopped = ledger.cancel("acme/w", 3, "/agent stop by @ada", installation_id=INST)
        assert {j.id for j in stopped} == {fix.id, ci.job.id, review.job.id}
        assert {j.status for j in ledger.issue_jobs("acme/w", 3, installation_id=INST)} == {JobStatus.CANCELLED}
    finally:
        ledger.close()


def test_a_ledger_from_before_the_follow_ups_gets_the_wider_index(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    SqliteLedger(path).close()
    with sqlite3.connect(path) as conn:  # as an earlier version left it
        conn.execute("DROP INDEX jobs_one_active_issue")
        conn.execute(OLD_INDEX)
    ledger = SqliteLedger(path)
    try:
        with sqlite3.connect(path) as conn:
            indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "jobs_one_active_issue" in indexes and "jobs_one_active_run" not in indexes
        ledger.submit(_req(JobKind.CI, "ci:1"))
        assert ledger.submit(_req(JobKind.REVIEW, "review:1")).job.status == JobStatus.WAITING  # one active run
    finally:
        ledger.close()
