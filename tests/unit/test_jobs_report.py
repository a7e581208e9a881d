"""`mini-fix jobs`: every row says how its job ended, and a closed pipe is no error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bot.cli.jobs_report import format_table, job_row
from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _job(ledger: SqliteLedger, issue: int, status: JobStatus | None, **finish: str) -> str:
    job = ledger.submit(JobRequest(JobKind.FIX, 7, "acme/widgets", issue, "alice", f"d-{issue}")).job
    if status is not None:
        assert ledger.claim(job.id, "w1", 60) is not None
        if status != JobStatus.RUNNING:
            assert ledger.finish(job.id, "w1", status, **finish)
    return job.id


def test_every_job_shows_its_ending(ledger: SqliteLedger) -> None:
    long_error = (
        "model_unavailable: ModelUnavailable: model hosted_vllm/x at http://vllm:8000/v1 unreachable\nafter 6 tries"
    )
    ids = {
        "failed": _job(ledger, 1, JobStatus.FAILED, error=long_error),
        "opened": _job(ledger, 2, JobStatus.SUCCEEDED, pr_url="https://github.com/acme/widgets/pull/9"),
        "running": _job(ledger, 3, JobStatus.RUNNING),
        "queued": _job(ledger, 4, None),
    }
    rows = {job.id: job_row(job) for job in ledger.list()}
    assert rows[ids["failed"]]["outcome"] == long_error  # the whole text in --json
    assert rows[ids["opened"]]["outcome"] == "pull request open"
    assert rows[ids["running"]]["outcome"] == "running"
    assert rows[ids["queued"]]["outcome"] == "waiting for a worker"
    lines = format_table(ledger.list()).splitlines()
    assert all(not line.rstrip().endswith(" -") for line in lines[1:])
    [failed] = [line for line in lines if line.startswith(ids["failed"])]
    assert "model_unavailable: ModelUnavailable: model hosted_vllm/x" in failed and "\n" not in failed
    assert failed.endswith("…")


def test_jobs_into_a_closed_pipe_ends_quietly(settings: Settings, ledger: SqliteLedger) -> None:
    for issue in range(1, 4):
        _job(ledger, issue, JobStatus.FAILED, error="clone_failed: 502")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MINIFIX_DATA_DIR": str(settings.data_dir)}
    env["MINIFIX_DATABASE_URL"] = settings.database_url or ""
    reader, writer = os.pipe()
    os.close(reader)  # `| head` that has already gone: every write gets EPIPE
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "jobs"], stdout=writer, stderr=subprocess.PIPE, env=env, cwd=ROOT
    )
    os.close(writer)
    assert done.returncode == 0 and b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr, done.stderr
