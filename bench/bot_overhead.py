"""Bot overhead of a 30-step job with a model that answers in 1 s (design.md target: ≤ 5% of the job's wall time).

One real job end to end on 127.0.0.1: a fake GitHub repository, `mini-fix serve` with its embedded worker (SQLite,
the real Docker sandbox), and a scripted model server that sleeps --model-delay seconds per reply and answers 30
steps (cheap `ls`/`cat`/`wc` commands, the one-character fix, the tests, then submit). Job wall time runs from the
signed `issues.labeled` delivery to the worker's `job finished` log stamp; model time is the sum of the server's
handler times (arrival to reply sent, stamped in the handler). Overhead = (job wall − model time) / job wall.
A short warm-up job runs first, so the measured job finds the worker already running with litellm imported
(--no-warmup to measure a cold worker's first job instead). Per-action sandbox time comes from the trajectory.
The measured job's GitHub writes are listed with their times from the label, and the last of them: writes nobody
waits for (reactions, the trajectory comment) may land after `job finished`. `--app-tree DIR` runs the App from
another checkout (e.g. a `git archive` of an older commit) with this harness, so two trees compare in one script.

    .venv/bin/python bench/bot_overhead.py [--steps 30] [--model-delay 1.0] [--timeout 600] [--no-warmup]
                                           [--app-tree DIR]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.e2e_harness import CALC, E2E, FIX_STEPS, NAME, OWNER, REPO, SUBMIT, log_events  # noqa: E402
from tests.support.model_server import Reply, bash_reply  # noqa: E402

TARGET = 0.05
CHEAP = ["ls", "cat calc.py", "cat test_calc.py", "ls -la", "wc -l calc.py", "head -n 1 calc.py"]
WARMUP_MARK = "WARMUP-JOB"


def long_script(steps: int) -> list[str]:
    """`steps` replies: cheap commands, then the fix, the tests and the submission."""
    cheap = [bash_reply(CHEAP[n % len(CHEAP)], f"Look around ({n + 1}).") for n in range(steps - 3)]
    fix = bash_reply("sed -i 's/a - b/a + b/' calc.py", "Fix the operator.")
    return [*cheap, fix, bash_reply("python3 -m unittest -q", "Run the tests."), SUBMIT]


def script(steps: int) -> list[Reply]:
    """Replies by turn: the short fix for the warm-up issue, the long script for the measured one."""
    long = long_script(steps)

    def reply(turn: int) -> Reply:
        def pick(messages: list[dict[str, Any]]) -> str:
            if WARMUP_MARK in str(messages[1].get("content", "")):
                return FIX_STEPS[turn] if turn < len(FIX_STEPS) else SUBMIT  # type: ignore[return-value]
            return long[turn]

        return pick

    return [reply(turn) for turn in range(steps)]


def job_finished(e2e: E2E, issue: int) -> float:
    """The worker's `job finished` stamp for one issue's succeeded job."""
    events = log_events(e2e.logs(), "job finished")
    return float(next(ev["at"] for ev in events if ev.get("issue") == issue and ev.get("status") == "succeeded"))


def action_times(trajectory: dict[str, Any]) -> list[float]:
    """Seconds from each reply's arrival to its observation being recorded (the sandbox action and its rendering)."""
    messages = trajectory["messages"]
    return [
        after["extra"]["timestamp"] - before["extra"]["timestamp"]
        for before, after in itertools.pairwise(messages)
        if before["role"] == "assistant" and after["role"] == "user" and "timestamp" in after.get("extra", {})
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--model-delay", type=float, default=1.0, help="seconds the model takes per reply")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per job")
    parser.add_argument("--no-warmup", action="store_true", help="measure the worker's first job (cold litellm)")
    parser.add_argument("--app-tree", type=Path, help="run the App from this checkout (PYTHONPATH and cwd)")
    args = parser.parse_args()
    if args.app_tree:  # the App's processes run `python -m bot.cli` from the cwd and inherit the environment
        tree = args.app_tree.resolve()
        os.environ["PYTHONPATH"] = str(tree)
        os.chdir(tree)
    with E2E(script(args.steps), delay=args.model_delay) as e2e:
        e2e.github.add_repo(OWNER, NAME, CALC)
        app = e2e.serve(worker=True)
        done = 0
        if not args.no_warmup:
            warm = e2e.github.add_issue(REPO, "add() subtracts", f"{WARMUP_MARK}: add(2, 3) returns -1")
            warm_sent = e2e.label(app.url, warm)
            e2e.wait_succeeded(1, args.timeout)
            print(f"warm-up job ({len(FIX_STEPS)} steps): {job_finished(e2e, warm) - warm_sent:.2f} s", flush=True)
            settle(e2e.rest_log)  # its writes nobody waited for are out: the measured job starts on a quiet App
            done = 1
        issue = e2e.github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1")
        first_arrival = len(e2e.model.arrivals)
        first_request = len(e2e.rest_log)
        sent = e2e.label(app.url, issue)
        e2e.wait_succeeded(done + 1, args.timeout)
        time.sleep(0.5)  # the log line may trail the ledger row by a moment
        finished = job_finished(e2e, issue)
        arrivals, replied = e2e.model.arrivals[first_arrival:], e2e.model.replied[first_arrival:]
        trajectory = next(t for t in e2e.trajectories() if t["mini_fix"]["issue"] == issue)
        settle(e2e.rest_log)
        writes = [
            (at, method, path)
            for at, (method, path) in zip(e2e.rest_log.times[first_request:], e2e.rest_log[first_request:], strict=True)
            if method in WRITES and not path.endswith("/access_tokens")
        ]
    report(sent, finished, arrivals, replied, trajectory, args.no_warmup)
    report_writes(sent, finished, writes)


WRITES = {"POST", "PATCH", "PUT", "DELETE"}


def settle(log: list[Any], quiet: float = 3.0, limit: float = 20.0) -> None:
    """Wait until the fake GitHub got no request for `quiet` s (writes sent after `job finished`), at most `limit`."""
    deadline, seen, since = time.monotonic() + limit, len(log), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        time.sleep(0.1)
        if len(log) != seen:
            seen, since = len(log), time.monotonic()


def report_writes(sent: float, finished: float, writes: list[tuple[float, str, str]]) -> None:
    """The job's GitHub writes, each with its arrival from the label; the last one against `job finished`."""
    print(f"  GitHub writes ({len(writes)}), seconds from the label:")
    for at, method, path in writes:
        print(f"    {at - sent:7.2f}  {method} {path}")
    if writes:
        last = writes[-1][0] - sent
        print(f"  label -> last GitHub write        {last:8.2f} s (job finished at {finished - sent:.2f} s)")


def report(
    sent: float, finished: float, arrivals: list[float], replied: list[float], trajectory: dict[str, Any], cold: bool
) -> None:
    """Overhead vs the target, and where the bot's time went."""
    wall = finished - sent
    model = sum(r - a for a, r in zip(arrivals, replied, strict=True))
    overhead = (wall - model) / wall
    gaps = [a - r for r, a in zip(replied, arrivals[1:], strict=False)]
    actions = action_times(trajectory)
    print(f"{len(arrivals)} model requests; {'cold worker (its first job)' if cold else 'warm worker'}")
    print(f"job wall (label -> job finished)   {wall:8.2f} s")
    print(f"model time (sum of handler times)  {model:8.2f} s")
    print(
        f"bot overhead                       {wall - model:8.2f} s = {overhead * 100:.2f}% of wall; "
        f"target {TARGET * 100:g}%; overhead / target = {overhead / TARGET:.2f}x"
    )
    print(f"  label -> first model request     {arrivals[0] - sent:8.2f} s")
    print(
        f"  between replies (reply sent -> next request) {sum(gaps):8.2f} s over {len(gaps)} steps, "
        f"median {statistics.median(gaps) * 1000:.0f} ms"
    )
    print(f"  last reply -> job finished       {finished - replied[-1]:8.2f} s (diff, push, PR, comments)")
    if actions:
        print(
            f"  per action (reply recorded -> observation recorded, trajectory): "
            f"median {statistics.median(actions) * 1000:.0f} ms, max {max(actions) * 1000:.0f} ms, n={len(actions)}"
        )


if __name__ == "__main__":
    main()
