"""Delivery -> worker pick-up latency with the API and a worker on separate data directories (one PostgreSQL).

What a scale-out deployment looks like from the queue's side: `mini-fix serve --no-worker` and one `mini-fix worker`
(MINIFIX_WORKERS=1), each with its own MINIFIX_DATA_DIR, both on one PostgreSQL ledger (a fresh schema of
MINIFIX_TEST_POSTGRES_URL, scripts/ensure-postgres.sh). Each job is an `issues.labeled` from a sender without write
access, so the worker claims it, denies it politely and is free again within a fraction of a second: the measurement
is the dispatch path, not a run. Jobs go one at a time (the next is delivered once the previous one has ended).
Latency = the worker's `job started` log stamp - the moment just before the delivery was sent; also shown from the
API's `delivery accepted` stamp (the ledger commit), which leaves out the webhook path itself.

    .venv/bin/python bench/pickup_latency.py [--jobs 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.e2e_harness import CALC, E2E, FIX_STEPS, NAME, OWNER, REPO, SECRET, ApiOnly, log_events, wait_for  # noqa: E402
from tests.support.app_process import AppProcess  # noqa: E402
from tests.support.postgres import fresh_schema  # noqa: E402
from tests.support.webhooks import deliver, labeled  # noqa: E402


def measure(jobs: int) -> tuple[list[float], list[float]]:
    """Pick-up latency of each of `jobs` sequential deliveries, from the send and from the accept, in seconds."""
    with E2E(FIX_STEPS) as e2e, fresh_schema() as url:
        e2e.github.add_repo(OWNER, NAME, CALC)
        e2e.github.set_permission("mallory", "read")
        env = {"MINIFIX_DATABASE_URL": url}
        api = ApiOnly(e2e.env(**env, MINIFIX_DATA_DIR=str(e2e.tmp / "api")), e2e.tmp / "api.log").start()
        worker_env = e2e.env(**env, MINIFIX_DATA_DIR=str(e2e.tmp / "worker"))
        worker = AppProcess(worker_env, e2e.tmp / "worker.log", command="worker").start()
        e2e.procs += [api, worker]
        e2e.wait_worker_started(worker)
        sent: list[float] = []
        for n in range(jobs):
            issue = e2e.github.add_issue(REPO, f"please fix ({n})", author="mallory")
            sent.append(time.time())
            response = deliver(f"{api.url}/webhook", "issues", labeled(REPO, issue, sender="mallory"), SECRET)
            assert response.status_code == 202, response.text
            wait_for(lambda n=n: len(log_events(worker.log(), "job finished")) > n, 120, f"job {n} to end")
        started = [e["at"] for e in log_events(worker.log(), "job started")]
        accepted = [e["at"] for e in log_events(api.log(), "delivery accepted")]
        from_send = [s - d for d, s in zip(sent, started, strict=True)]
        return from_send, [s - a for a, s in zip(accepted, started, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10)
    args = parser.parse_args()
    for name, latencies in zip(("delivery sent", "delivery accepted"), measure(args.jobs), strict=True):
        print(f"{name} -> worker pick-up (s):", " ".join(f"{x:.3f}" for x in latencies))
        print(f"  median {statistics.median(latencies):.3f} s, max {max(latencies):.3f} s over {len(latencies)} jobs")


if __name__ == "__main__":
    main()
