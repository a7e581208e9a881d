"""Many worker processes on one PostgreSQL: each job done once, never twice at once, crashes recovered by leases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger import open_ledger
from bot.queue.dispatch import build_queue
from bot.settings import Settings
from tests.support.backends import backend_settings

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]
LEASE_SECONDS = 2


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    with backend_settings("postgres", tmp_path, lease_seconds=LEASE_SECONDS, max_claims=2) as settings:
        yield settings


@pytest.fixture
def start_worker(settings: Settings, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start worker processes (tests/support/worker_entry.py) on the test database; all are killed at the end."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> subprocess.Popen[bytes]:
        environ = {
            **os.environ,
            "MINIFIX_DATABASE_URL": settings.database_url or "",
            "MINIFIX_DATA_DIR": str(tmp_path),
            "MINIFIX_WEBHOOK_SECRET": settings.webhook_secret.get_secret_value(),
            "MINIFIX_LEASE_SECONDS": str(LEASE_SECONDS),
            "MINIFIX_MAX_CLAIMS": "2",
            "MINIFIX_WORKERS": "2",
            "MINIFIX_TEST_RUN_LOG": str(tmp_path / "runs.log"),
            **env,
        }
        log = (tmp_path / f"worker-{len(procs)}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.worker_entry"], cwd=ROOT, env=environ, stdout=log, stderr=log
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def submit_jobs(settings: Settings, count: int) -> list[str]:
    ledger: Any = open_ledger(settings)
    queue = build_queue(settings)
    try:
        ids = []
        for issue in range(1, count + 1):
            job = ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", issue, "alice", f"d-{issue}")).job
            queue.enqueue(job.id)
            ids.append(job.id)
        return ids
    finally:
        queue.close()
        ledger.close()


def runs(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def wait_until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def statuses(settings: Settings, ids: list[str]) -> dict[str, tuple[JobStatus, int]]:
    ledger: Any = open_ledger(settings)
    try:
        return {i: (job.status, job.attempts) for i in ids if (job := ledger.get(i)) is not None}
    finally:
        ledger.close()


def test_two_workers_one_killed_every_job_done_once(
    settings: Settings, start_worker: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    ids = submit_jobs(settings, 20)
    victim = start_worker(MINIFIX_TEST_JOB_SECONDS="0.5")
    start_worker(MINIFIX_TEST_JOB_SECONDS="0.5")
    wait_until(lambda: any(r[0] == "start" and r[2] == str(victim.pid) for r in runs(log)))
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    killed_at = time.monotonic()
    wait_until(lambda: all(s == JobStatus.SUCCEEDED for s, _ in statuses(settings, ids).values()))

    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    open_runs: dict[tuple[str, str], float] = {}
    ends: dict[str, int] = defaultdict(int)
    for kind, job_id, pid, at, *_ in runs(log):
        if kind == "start":
            open_runs[job_id, pid] = float(at)
        elif kind == "end":
            spans[job_id].append((open_runs.pop((job_id, pid)), float(at)))
            ends[job_id] += 1
    interrupted = [job_id for job_id, pid in open_runs if pid == str(victim.pid)]
    for job_id in interrupted:  # the killed worker's runs lasted at most until the kill
        spans[job_id].append((open_runs.pop((job_id, str(victim.pid))), killed_at))
    assert open_runs == {} and interrupted
    assert ends == dict.fromkeys(ids, 1)  # every job finished exactly once
    for job_id, job_spans in spans.items():
        ordered = sorted(job_spans)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(ordered)), job_id
    attempts = {i: n for i, (_, n) in statuses(settings, ids).items()}
    assert {attempts[i] for i in interrupted} == {2}
    # A job the victim had claimed but not yet logged as started also took a second attempt; the victim had 2 slots.
    claimed_unseen = [i for i, n in attempts.items() if i not in interrupted and n != 1]
    assert set(attempts.values()) <= {1, 2} and len(interrupted) + len(claimed_unseen) <= 2


def test_a_job_that_keeps_crashing_its_worker_gives_up(
    settings: Settings, start_worker: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    [job_id] = submit_jobs(settings, 1)

    def failed() -> bool:
        if not any(p.poll() is None for p in live):  # the supervisor's job: bring a crashed worker back
            live.append(start_worker(MINIFIX_TEST_CRASH_ISSUE="1"))
        return statuses(settings, [job_id])[job_id][0] == JobStatus.FAILED

    live = [start_worker(MINIFIX_TEST_CRASH_ISSUE="1")]
    wait_until(failed)
    assert statuses(settings, [job_id])[job_id] == (JobStatus.FAILED, 2)
    assert [r[0] for r in runs(log) if r[1] == job_id].count("start") == 2
    wait_until(lambda: any(r[0] == "gave_up" and r[1] == job_id for r in runs(log)), timeout=10)
