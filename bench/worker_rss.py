"""A worker's memory over many real jobs: its RSS after the 1st, 10th, 50th and 100th job, side by side.

One `mini-fix serve --no-worker` and one `mini-fix worker` (MINIFIX_WORKERS=1) on one data dir, a fake GitHub
with one repository and N issues, a scripted model that fixes a one-character bug in 4 steps, and the real Docker
sandbox: every job clones, runs the agent in a fresh container, pushes and opens a draft PR. RSS is read from
/proc/<worker pid>/status (VmRSS) as soon as the worker logs each checkpoint's `job finished`.
Needs the Docker engine and mini-fix-sandbox:latest (scripts/ensure-docker.sh).

    .venv/bin/python bench/worker_rss.py [--jobs 100]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.e2e_harness import CALC, E2E, FIX_STEPS, NAME, OWNER, REPO, log_events  # noqa: E402


def rss_kib(pid: int) -> int:
    """The process's resident set size in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def measure(jobs: int, checkpoints: list[int], timeout: float) -> dict[int, int]:
    """RSS (KiB) of the worker right after each checkpoint's job finished."""
    found: dict[int, int] = {}
    with E2E(FIX_STEPS) as e2e:
        e2e.github.add_repo(OWNER, NAME, CALC)
        issues = [e2e.github.add_issue(REPO, f"add() subtracts ({n})", "add(2, 3) returns -1") for n in range(jobs)]
        api = e2e.serve(worker=False)
        worker = e2e.worker()
        assert worker.proc is not None
        found[0] = rss_kib(worker.proc.pid)
        for issue in issues:
            e2e.label(api.url, issue)
        deadline = time.monotonic() + timeout
        while len(found) <= len(checkpoints) and time.monotonic() < deadline:
            done = len(log_events(worker.log(), "job finished"))
            for point in checkpoints:
                if done >= point and point not in found:
                    found[point] = rss_kib(worker.proc.pid)
                    print(f"  after {done:>3} jobs: worker RSS {found[point] / 1024:.1f} MiB", flush=True)
            time.sleep(0.2)
        if len(e2e.github.pulls) < max(found):
            raise RuntimeError(f"only {len(e2e.github.pulls)} pull requests for {max(found)} jobs")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    checkpoints = sorted({1, min(10, args.jobs), min(50, args.jobs), args.jobs})
    found = measure(args.jobs, checkpoints, args.timeout)
    print(
        f"worker RSS: idle {found[0] / 1024:.1f} MiB; "
        + ", ".join(f"after {n} {found[n] / 1024:.1f} MiB" for n in checkpoints if n in found)
    )
    if 1 in found and args.jobs in found:
        print(f"after {args.jobs} / after 1 = {found[args.jobs] / found[1]:.2f}x")


if __name__ == "__main__":
    main()
