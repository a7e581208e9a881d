"""Jobs per hour for 20 jobs with 1 vs 2 worker processes sharing one PostgreSQL, side by side.

Each job runs the scripted runner of tests/support/worker_entry.py (it holds a job for --job-seconds, standing in
for a model + sandbox run); everything around it is the product: ledger claims and leases, PostgresHuey dispatch,
lease renewal, the reconciler. It measures what the scale-out machinery adds and how throughput scales with
processes, not agent speed. Needs MINIFIX_TEST_POSTGRES_URL (scripts/ensure-postgres.sh).

    .venv/bin/python bench/jobs_per_hour.py [--jobs 20] [--job-seconds 2] [--slots 1]
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

from bot.jobs import JobKind, JobRequest, JobStatus  # noqa: E402
from bot.ledger import open_ledger  # noqa: E402
from bot.queue import build_queue  # noqa: E402
from tests.support.backends import backend_settings  # noqa: E402


def run(workers: int, jobs: int, job_seconds: float, slots: int) -> float:
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
            while len(list(Path(tmp).glob("runs.log.ready-*"))) < workers:
                time.sleep(0.05)
            ledger: Any = open_ledger(settings)
            queue = build_queue(settings)
            started = time.monotonic()
            ids = []
            for issue in range(1, jobs + 1):
                job = ledger.submit(JobRequest(JobKind.FIX, 1, "bench/repo", issue, "bench", f"d-{issue}")).job
                queue.enqueue(job.id)
                ids.append(job.id)
            while not all(j.status == JobStatus.SUCCEEDED for i in ids if (j := ledger.get(i))):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--job-seconds", type=float, default=2.0)
    parser.add_argument("--slots", type=int, default=1, help="jobs one worker process runs at once")
    args = parser.parse_args()
    results = {n: run(n, args.jobs, args.job_seconds, args.slots) for n in (1, 2)}
    ideal = args.jobs * args.job_seconds / args.slots
    print(f"{args.jobs} jobs of {args.job_seconds:g} s, {args.slots} slot(s) per worker process")
    print(f"{'workers':>8} {'seconds':>9} {'jobs/hour':>10} {'vs ideal':>9}")
    for n, seconds in results.items():
        print(f"{n:>8} {seconds:>9.2f} {args.jobs / seconds * 3600:>10.0f} {ideal / n / seconds:>9.2f}")
    print(f"2 workers / 1 worker: {results[1] / results[2]:.2f}x")


if __name__ == "__main__":
    main()
