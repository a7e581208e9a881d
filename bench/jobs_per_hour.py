"""Jobs per hour for 20 jobs with 1 vs 2 worker processes, side by side in one run.

Default (pipeline mode): 20 real jobs end to end. One fake GitHub repository (127.0.0.1) with 20 issues, each
labelled by a signed `issues.labeled` webhook; `mini-fix serve --no-worker` plus N `mini-fix worker` processes
(MINIFIX_WORKERS=1 each) sharing one MINIFIX_DATA_DIR (SQLite ledger and queue); the real Docker sandbox; a scripted
model that fixes a one-character bug in 4 steps. Wall time runs from the first delivery until the ledger
(`mini-fix jobs --json`) shows all jobs succeeded; the end is taken from the workers' `job finished` log stamps.
Needs the Docker engine and mini-fix-sandbox:latest (scripts/ensure-docker.sh).

--scripted: the older measurement of the scale-out machinery alone. Each job runs the scripted runner of
tests/support/worker_entry.py (it holds a job for --job-seconds), against one PostgreSQL
(MINIFIX_TEST_POSTGRES_URL, scripts/ensure-postgres.sh).

    .venv/bin/python bench/jobs_per_hour.py [--jobs 20] [--model-delay 0] [--timeout 900]
    .venv/bin/python bench/jobs_per_hour.py --scripted [--jobs 20] [--job-seconds 2] [--slots 1]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.e2e_harness import CALC, E2E, FIX_STEPS, NAME, OWNER, REPO  # noqa: E402
from bot.jobs import JobKind, JobRequest, JobStatus  # noqa: E402
from bot.ledger import open_ledger  # noqa: E402
from bot.queue.dispatch import build_queue  # noqa: E402
from tests.support.backends import backend_settings  # noqa: E402


def pipeline_run(workers: int, jobs: int, model_delay: float, timeout: float) -> float:
    """Seconds from the first delivery to the last job finished, with `workers` worker processes."""
    with E2E(FIX_STEPS, delay=model_delay) as e2e:
        e2e.github.add_repo(OWNER, NAME, CALC)
        issues = [e2e.github.add_issue(REPO, f"add() subtracts ({n})", "add(2, 3) returns -1") for n in range(jobs)]
        api = e2e.serve(worker=False)
        for _ in range(workers):
            e2e.worker()
        started = min(e2e.label(api.url, issue) for issue in issues)
        e2e.wait_succeeded(jobs, timeout)
        if len(e2e.github.pulls) != jobs:
            raise RuntimeError(f"expected {jobs} pull requests, found {len(e2e.github.pulls)}")
        finished = e2e.finished_at()
        per_worker = [len([line for line in p.log().splitlines() if '"job finished"' in line]) for p in e2e.procs[1:]]
        print(f"  {workers} worker process(es): jobs per process {per_worker}", flush=True)
        return max(finished) - started


def scripted_run(workers: int, jobs: int, job_seconds: float, slots: int) -> float:
    """Seconds from the first enqueue to the last job recorded done, with `workers` processes."""
    with tempfile.TemporaryDirectory() as tmp, backend_settings("postgres", Path(tmp)) as settings:
        env = {
            **os.environ,
            "MINIFIX_DATABASE_URL": settings.database_url or "",
            "MINIFIX_DATA_DIR": tmp,
            "MINIFIX_WEBHOOK_SECRET": "bench-secret-5e1d",
            "MINIFIX_WORKERS": str(slots),
            "MINIFIX_LOG_LEVEL": "WARNING",
            "MINIFIX_TEST_RUN_LOG": f"{tmp}/runs.log",
            "MINIFIX_TEST_JOB_SECONDS": str(job_seconds),
        }
        procs = [
            subprocess.Popen([sys.executable, "-m", "tests.support.worker_entry"], cwd=ROOT, env=env)
            for _ in range(workers)
        ]
        try:
            deadline = time.monotonic() + 120
            while len(list(Path(tmp).glob("runs.log.ready-*"))) < workers and time.monotonic() < deadline:
                time.sleep(0.05)
            ledger: Any = open_ledger(settings)
            queue = build_queue(settings)
            started = time.monotonic()
            ids = []
            for issue in range(1, jobs + 1):
                job = ledger.submit(JobRequest(JobKind.FIX, 1, "bench/repo", issue, "bench", f"d-{issue}")).job
                queue.enqueue(job.id)
                ids.append(job.id)
            deadline = started + 600
            while not all(j.status == JobStatus.SUCCEEDED for i in ids if (j := ledger.get(i))):
                if time.monotonic() > deadline:
                    raise TimeoutError("jobs did not finish in 600 s")
                time.sleep(0.02)
            elapsed = time.monotonic() - started
            queue.close()
            ledger.close()
            return elapsed
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(30)


def report(results: dict[int, float], jobs: int, ideal: float | None) -> None:
    """The side-by-side table and the 2-vs-1 ratio."""
    print(f"{'workers':>8} {'seconds':>9} {'jobs/hour':>10}" + (f" {'vs ideal':>9}" if ideal else ""))
    for n, seconds in results.items():
        line = f"{n:>8} {seconds:>9.2f} {jobs / seconds * 3600:>10.0f}"
        print(line + (f" {ideal / n / seconds:>9.2f}" if ideal else ""))
    print(f"2 workers / 1 worker: {results[1] / results[2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--scripted", action="store_true", help="scripted runner on PostgreSQL, no pipeline")
    parser.add_argument("--model-delay", type=float, default=0.0, help="pipeline: seconds per model reply")
    parser.add_argument("--timeout", type=float, default=900.0, help="pipeline: seconds allowed per measurement")
    parser.add_argument("--job-seconds", type=float, default=2.0, help="scripted: seconds one job holds")
    parser.add_argument("--slots", type=int, default=1, help="scripted: jobs one worker process runs at once")
    args = parser.parse_args()
    if args.scripted:
        results = {n: scripted_run(n, args.jobs, args.job_seconds, args.slots) for n in (1, 2)}
        print(f"{args.jobs} jobs of {args.job_seconds:g} s, {args.slots} slot(s) per worker process")
        report(results, args.jobs, args.jobs * args.job_seconds / args.slots)
        return
    print(
        f"{args.jobs} real jobs ({len(FIX_STEPS)} model steps each, model delay {args.model_delay:g} s), "
        f"{os.cpu_count()} CPUs; serve --no-worker + N `mini-fix worker` (1 slot each), SQLite",
        flush=True,
    )
    results = {n: pipeline_run(n, args.jobs, args.model_delay, args.timeout) for n in (1, 2)}
    report(results, args.jobs, None)


if __name__ == "__main__":
    main()
