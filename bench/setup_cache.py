"""Label → first model request for a repository whose `setup` takes ≥ 30 s: its first job (setup runs, and is
cached) against its next one (restored from the cache), beside a repository with no setup, in one run.

design.md's target: the next job's label → first model request ≤ 1.2× that of a repository with no setup.

The real App path: `mini-fix serve` (embedded worker, SQLite, the real Docker sandbox and image), a fake GitHub on
127.0.0.1 serving both repositories over git smart HTTP, a scripted model server stamping each request's arrival.
The setup is honest but synthetic (nothing offline here is that slow): 2,000 files of random bytes (32 MiB) written
into an ignored `node_modules/`, then `sleep 30`. Jobs run one after another: `acme/plain` first (the worker's
first job, shown, not compared), then `acme/calc` (setup runs), then `--pairs` times `acme/calc` (restored) and
`acme/plain` (the baseline) in turn; the ratios compare medians.

    .venv/bin/python bench/setup_cache.py [--sleep 30] [--files 2000] [--pairs 3] [--timeout 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.e2e_harness import CALC, E2E, FIX_STEPS, OWNER, REPO, log_events, wait_for  # noqa: E402

PLAIN = f"{OWNER}/plain"
TARGET = 1.2
WARMUP, COLD, NEXT, PLAIN_JOB = (
    "plain, the worker's first job",
    "setup, first job",
    "setup, next job",
    "plain (no setup)",
)


def setup_config(sleep: int, files: int) -> str:
    """The slow repository's `.github/mini-fix.yml`."""
    write = (
        f"mkdir -p node_modules && for i in $(seq 1 {files}); do head -c 16384 /dev/urandom > node_modules/f$i; done"
    )
    return f"setup:\n  - '{write}'\n  - 'sleep {sleep}'\n"


def one_job(e2e: E2E, url: str, repo: str, done: int, timeout: float) -> float:
    """Label a new issue of `repo`; seconds from the webhook to the job's first model request."""
    issue = e2e.github.add_issue(repo, "add() subtracts", "add(2, 3) returns -1")
    seen = len(e2e.model.arrivals)
    sent = e2e.label(url, issue, repo=repo)
    wait_for(lambda: len(e2e.model.arrivals) > seen, timeout, "the first model request", interval=0.01)
    first = min(t for t in e2e.model.arrivals[seen:] if t >= sent)
    e2e.wait_succeeded(done + 1, timeout)
    return first - sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleep", type=int, default=30, help="seconds the setup sleeps")
    parser.add_argument("--files", type=int, default=2000, help="16 KiB files the setup writes")
    parser.add_argument("--pairs", type=int, default=3, help="restored and no-setup jobs, in turn, after the first")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per job")
    args = parser.parse_args()
    with E2E(FIX_STEPS) as e2e:
        e2e.github.add_repo(OWNER, "calc", {**CALC, ".gitignore": "node_modules/\n",
                                            ".github/mini-fix.yml": setup_config(args.sleep, args.files)})  # fmt: skip
        e2e.github.add_repo(OWNER, "plain", dict(CALC))
        app = e2e.serve(worker=True)
        print(f"serve with embedded worker, healthy; setup: {args.files} x 16 KiB files + sleep {args.sleep}")
        order = [(WARMUP, PLAIN), (COLD, REPO)] + [(NEXT, REPO), (PLAIN_JOB, PLAIN)] * args.pairs
        seconds = [one_job(e2e, app.url, repo, n, args.timeout) for n, (_label, repo) in enumerate(order)]
        logs = e2e.logs()
        uses = {result: len(log_events(logs, f"setup_cache.{result}")) for result in ("hit", "miss", "store", "skip")}
        restores = [float(e["seconds"]) for e in log_events(logs, "setup_cache.hit")]
        entries = sorted((e2e.data / "setup-cache").glob("*/*.tar"))
        sizes = [p.stat().st_size for p in entries]
    report(order, seconds, uses, sizes, restores)


def report(
    order: list[tuple[str, str]], seconds: list[float], uses: dict[str, int], sizes: list[int], restores: list[float]
) -> None:
    """Each job side by side, then the ratios of the medians."""
    print(f"{'job':<34} {'label -> first model request (s)':>34}")
    for (label, _repo), value in zip(order, seconds, strict=True):
        print(f"{label:<34} {value:>34.2f}")
    cold = seconds[1]
    warm = statistics.median(s for (label, _), s in zip(order, seconds, strict=True) if label == NEXT)
    plain = statistics.median(s for (label, _), s in zip(order, seconds, strict=True) if label == PLAIN_JOB)
    print(f"setup cache uses logged: {uses}; entries: {len(sizes)} ({sum(sizes) / 2**20:.1f} MiB)")
    print("restores (s, every sandbox that restored): " + " ".join(f"{r:.2f}" for r in restores))
    print(f"first job / median next job = {cold / warm:.2f}x ({cold:.2f} s / {warm:.2f} s)")
    ratio = warm / plain
    print(f"median next job / median no-setup job = {ratio:.2f}x ({warm:.2f} s / {plain:.2f} s; target <= {TARGET}x)")


if __name__ == "__main__":
    start = time.monotonic()
    main()
    print(f"bench took {time.monotonic() - start:.0f} s")
