"""Label → first model request for a 20 MB repository, worker already running (design.md target: ≤ 3 s).

A fake GitHub on 127.0.0.1 serves one repository of about 20 MB packed (a few hundred files of random base64 text
plus two random binaries, plus a small calc.py with a bug) over git smart HTTP. `mini-fix serve` (embedded worker,
SQLite, the real Docker sandbox) starts and is healthy; then, N times, a new issue is labelled by a signed webhook and
the clock runs until the scripted model server's handler receives that job's first request. Each job then finishes
(4 scripted steps) before the next is labelled. The breakdown comes from the App's JSON logs (`job started`), the
fake GitHub's request log (stamped on arrival) and the sandbox container's Created/StartedAt. The first job of a
fresh worker process also pays the lazy litellm import; it is shown, and the median covers all runs.

    .venv/bin/python bench/label_latency.py [--runs 5] [--size-mb 20] [--timeout 300]
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.e2e_harness import CALC, E2E, FIX_STEPS, NAME, OWNER, REPO, SECRET, log_events, wait_for  # noqa: E402
from tests.support.fake_github import FakeGitHub  # noqa: E402
from tests.support.webhooks import deliver, labeled  # noqa: E402

TARGET = 3.0
STAGES = [
    ("accept (webhook 202)", "sent", "answered"),
    ("dispatch + claim", "answered", "claimed"),
    ("claim -> permission check", "claimed", "permission"),
    ("permission -> clone starts", "permission", "clone_start"),
    ("clone", "clone_start", "clone_end"),
    ("clone -> container created", "clone_end", "created"),
    ("container start", "created", "started"),
    ("copy-in, runner, first query", "started", "first_request"),
]


class Gate:
    """The first scripted reply: it notes the request and holds it until the bench has inspected the sandbox."""

    def __init__(self) -> None:
        self.seen = threading.Event()
        self.release = threading.Event()

    def __call__(self, _messages: list[dict[str, Any]]) -> str:
        self.seen.set()
        self.release.wait(60)
        self.release.clear()
        return FIX_STEPS[0]  # type: ignore[return-value]


def seed_big_repo(github: FakeGitHub, size_mb: float) -> int:
    """Push one commit of incompressible-ish content; return the bare repository's packed size in bytes."""
    github.add_repo(OWNER, NAME, CALC)
    work = github.root / "_work" / REPO
    rnd = random.Random(20)
    text_mb = size_mb * 0.45 / 0.75  # base64 of random bytes packs to about 3/4 of its size
    for n in range(300):
        lines = [base64.b64encode(rnd.randbytes(57)).decode() for _ in range(int(text_mb * 2**20 / 300 / 77))]
        path = work / f"data/part{n % 10}/file{n:03d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    for n in range(2):
        (work / f"assets/blob{n}.bin").parent.mkdir(exist_ok=True)
        (work / f"assets/blob{n}.bin").write_bytes(rnd.randbytes(int(size_mb * 0.55 / 2 * 2**20)))
    git = ["git", "-C", str(work), "-c", "user.name=Seed", "-c", "user.email=seed@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "Add data"], check=True)
    subprocess.run([*git, "push", "-q", str(github.repos[REPO]["bare"]), "HEAD:refs/heads/main"], check=True)
    bare = Path(github.repos[REPO]["bare"])
    return sum(p.stat().st_size for p in bare.glob("objects/**/*") if p.is_file())


def docker_time(stamp: str) -> float:
    """Docker's RFC 3339 nanosecond stamp as epoch seconds."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}+00:00").timestamp()


def first_after(times: list[float], items: list[Any], since: float, match: Any) -> float:
    """The time of the first logged item at or after `since` that `match` accepts."""
    return next(t for t, item in zip(times, items, strict=True) if t >= since and match(item))


def one_run(e2e: E2E, url: str, gate: Gate, done: int, timeout: float) -> dict[str, float]:
    """Label a new issue; the moments of its way to the first model request."""
    issue = e2e.github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1")
    sent = time.time()
    response = deliver(f"{url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
    answered = time.time()
    assert response.status_code == 202, response.text
    wait_for(gate.seen.is_set, timeout, "the first model request", interval=0.01)
    first_request = max(e2e.model.arrivals)
    job_id = next(r["id"] for r in e2e.jobs() if r["issue"] == issue)
    state = e2e.containers(job_id)[0].attrs
    gate.seen.clear()
    gate.release.set()
    e2e.wait_succeeded(done + 1, timeout)
    rest, git = e2e.rest_log, e2e.git_log
    claimed = next(ev["at"] for ev in log_events(e2e.logs(), "job started") if ev.get("issue") == issue)
    git_times = [t for t in git.times if sent <= t <= first_request]  # the clone, not the later push
    comments = f"/repos/{REPO}/issues/{issue}/comments"
    return {
        "sent": sent,
        "answered": answered,
        "claimed": claimed,
        "permission": first_after(rest.times, rest, sent, lambda r: r[1].endswith("/permission")),
        "clone_start": git_times[0],
        "clone_end": first_after(rest.times, rest, git_times[-1], lambda r: r == ("GET", comments)),
        "created": docker_time(state["Created"]),
        "started": docker_time(state["State"]["StartedAt"]),
        "first_request": first_request,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size-mb", type=float, default=20.0, help="target packed size of the repository")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per run")
    args = parser.parse_args()
    gate = Gate()
    with E2E([gate, *FIX_STEPS[1:]]) as e2e:
        packed = seed_big_repo(e2e.github, args.size_mb)
        app = e2e.serve(worker=True)
        print(f"repository {REPO}: {packed / 2**20:.1f} MiB packed; serve with embedded worker, healthy", flush=True)
        runs = [one_run(e2e, app.url, gate, n, args.timeout) for n in range(args.runs)]
    report(runs)


def report(runs: list[dict[str, float]]) -> None:
    """Each run, the median, the breakdown and the ratio to the target."""
    latencies = [r["first_request"] - r["sent"] for r in runs]
    print(f"{'run':>4} {'label->first request (s)':>26}")
    for n, seconds in enumerate(latencies, 1):
        print(f"{n:>4} {seconds:>26.3f}" + ("   (first job of the worker process)" if n == 1 else ""))
    median = statistics.median(latencies)
    if len(latencies) > 1:
        warm = statistics.median(latencies[1:])
        print(f"first job / median of the warm worker's jobs = {latencies[0] / warm:.2f}x (target <= 1.5x)")
    print(f"median {median:.3f} s; target {TARGET:g} s; median / target = {median / TARGET:.2f}x")
    print("breakdown, median over runs (s):" + "".join(f" run{n}" for n in range(1, len(runs) + 1)))
    for name, start, end in STAGES:
        values = [r[end] - r[start] for r in runs]
        print(f"  {name:<32} {statistics.median(values):>7.3f}   " + " ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    main()
