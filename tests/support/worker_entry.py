"""`mini-fix worker` with a scripted runner, for multi-process tests: `python -m tests.support.worker_entry`.

The runner records `start`/`end` lines (job id, pid, monotonic time) to MINIFIX_TEST_RUN_LOG, sleeps
MINIFIX_TEST_JOB_SECONDS, and kills its own process (like a crash of the whole worker) when it runs the issue
named by MINIFIX_TEST_CRASH_ISSUE. The gave-up hook writes a `gave_up` line instead of commenting on GitHub.
Everything else — settings, ledger, queue, leases, reconciler, signals — is the product's own code.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from bot.jobs import Job, JobOutcome, JobStatus
from bot.logs import configure_logging
from bot.settings import Settings
from bot.worker import pool as worker_module
from bot.worker.pool import build_worker


def record(*fields: object) -> None:
    """Append one line to the run log; O_APPEND keeps lines from several processes whole."""
    line = " ".join(str(f) for f in fields) + "\n"
    fd = os.open(os.environ["MINIFIX_TEST_RUN_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def scripted_runner(job: Job, cancel: threading.Event) -> JobOutcome:
    """Pretend to work on the job for a while; crash the process on the chosen issue."""
    record("start", job.id, os.getpid(), time.monotonic(), job.attempts)
    if str(job.issue) == os.environ.get("MINIFIX_TEST_CRASH_ISSUE"):
        os.kill(os.getpid(), signal.SIGKILL)
    if cancel.wait(float(os.environ.get("MINIFIX_TEST_JOB_SECONDS", "0.2"))):
        record("cancelled", job.id, os.getpid(), time.monotonic(), job.attempts)
        return JobOutcome(JobStatus.CANCELLED, error="cancelled")
    record("end", job.id, os.getpid(), time.monotonic(), job.attempts)
    return JobOutcome(JobStatus.SUCCEEDED, run_id=f"run-{job.id}")


def main() -> int:
    settings = Settings()
    configure_logging(settings.log_level, "json", settings.secrets)
    # Notice expired leases within half a lease (the tests use leases of a second or two).
    worker_module.RECONCILE_EVERY = settings.lease_seconds / 2
    worker = build_worker(
        settings, scripted_runner, on_gave_up=lambda job: record("gave_up", job.id, os.getpid(), time.monotonic())
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker.start()
    Path(os.environ["MINIFIX_TEST_RUN_LOG"] + f".ready-{os.getpid()}").touch()
    stop.wait()
    worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
