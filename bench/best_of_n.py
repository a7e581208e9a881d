"""Best of N: `mini-fix eval` on the same tasks with 1 attempt and with N, side by side in one run.

The tasks are the small buggy repositories of tests/support/buggy_repos.py (a hidden test decides `resolved`).
Each arm is a real `mini-fix eval --attempts K` (the App's agent, Docker sandbox, verification and choice); the
arms run task by task, interleaved, so a run cut short still compares them on the same tasks. `--attempt-workers K`
runs a task's N attempts K at a time (default all N; 1 for a serial model server such as llama.cpp on CPU).
Prints the resolve rates and their ratio, the oracle (any attempt resolved), the reproduction-test rate, and wall
and model time.

    .venv/bin/python bench/best_of_n.py --scripted            # the mechanics: scripted attempts that differ
    .venv/bin/python bench/best_of_n.py --attempts 3 [--tasks calc,shout,pages,mean] [--step-limit 10]
        [--max-tokens 256] [--wall-time 900] [--call-timeout 300] [--seed 1] [--budget-minutes 60]
        [--attempt-workers 1] [--keep DIR]                    # the real model (llama.cpp)
    .venv/bin/python bench/best_of_n.py --summarize --keep DIR   # the table again, from a kept (or cut) run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.real_model import api_base  # noqa: E402
from bot.eval.store import ResultStore  # noqa: E402
from tests.support.buggy_repos import REPOS  # noqa: E402
from tests.support.buggy_tasks import scripted_reply, write_tasks  # noqa: E402
from tests.support.model_server import ScriptedModelServer  # noqa: E402


def overlay(args: argparse.Namespace) -> dict[str, Any]:
    """Budgets laid over prompts/agent.yaml (the temperatures come from its attempt schedule)."""
    kwargs = {"seed": args.seed, "max_tokens": args.max_tokens, "timeout": args.call_timeout}
    return {
        "agent": {"step_limit": args.step_limit, "wall_time_limit_seconds": args.wall_time},
        "model": {"model_kwargs": kwargs},
    }


def run_eval(
    tasks: Path, out: Path, attempts: int, model: str, base: str, config: Path, data: Path, workers: int | None
) -> float:
    """One `mini-fix eval --attempts K [--attempt-workers W]` over `tasks` into `out` (resumed); its wall seconds."""
    env = {**os.environ, "MINIFIX_DATA_DIR": str(data), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", "bot.cli", "eval", str(tasks), "--output", str(out), "--attempts", str(attempts)]
    if workers:
        command += ["--attempt-workers", str(workers)]
    # -c replaces prompts/agent.yaml (mini-swe-agent's -c): name ours first so the overlay layers on it
    command += ["--model", model, "--api-base", base, "-c", str(ROOT / "prompts" / "agent.yaml"), "-c", str(config)]
    began = time.monotonic()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"mini-fix eval failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.monotonic() - began


def arm_summary(out: Path, names: list[str]) -> dict[str, Any]:
    """What one arm measured over the named tasks, from its eval results (wall = the tasks' own seconds)."""
    records = [r for r in ResultStore(out).finished().values() if r["instance_id"] in names]
    attempts = [a for r in records for a in r.get("attempts", [])]
    chosen = [a for a in attempts if a["chosen"]]
    return {
        "tasks": len(records),
        "resolved": sum(1 for r in records if r.get("resolved")),
        "any_resolved": sum(1 for r in records if r.get("any_resolved")),
        "attempts": len(attempts),
        "submitted": sum(1 for a in attempts if a["exit_status"] == "Submitted"),
        "valid_reproductions": sum(1 for a in attempts if (a["reproduction"] or {}).get("valid")),
        "chosen_with_reproduction": sum(1 for a in chosen if (a["reproduction"] or {}).get("valid")),
        "wall_seconds": sum(r.get("seconds", 0.0) for r in records),
        "model_seconds": sum(a.get("model_seconds", 0.0) for a in attempts),
        "steps": sum(a.get("steps", 0) for a in attempts),
        "tokens": sum(a.get("tokens", 0) for a in attempts),
    }


def table(arms: dict[int, dict[str, Any]]) -> str:
    """The two arms side by side, as Markdown, then the ratios."""
    lines = [
        "| attempts | resolved | any attempt resolved | submitted | valid reproduction tests | chosen with one "
        "| steps | tokens | model s | wall s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, a in arms.items():
        lines.append(
            f"| {n} | {a['resolved']}/{a['tasks']} | {a['any_resolved']}/{a['tasks']} "
            f"| {a['submitted']}/{a['attempts']} "
            f"| {a['valid_reproductions']}/{a['attempts']} | {a['chosen_with_reproduction']}/{a['tasks']} "
            f"| {a['steps']} | {a['tokens']} | {a['model_seconds']:.0f} | {a['wall_seconds']:.0f} |"
        )
    one, many = arms[min(arms)], arms[max(arms)]
    lines += ["", f"resolve rate, {max(arms)} attempts / 1: {_ratio(many['resolved'], one['resolved'])}"]
    lines.append(f"model time, {max(arms)} attempts / 1: {_ratio(many['model_seconds'], one['model_seconds'])}")
    lines.append(f"wall time, {max(arms)} attempts / 1: {_ratio(many['wall_seconds'], one['wall_seconds'])}")
    return "\n".join(lines)


def _ratio(a: float, b: float) -> str:
    if b:
        return f"{a / b:.2f}x"
    return "n/a (0 / 0)" if not a else f"n/a ({a:g} against 0)"


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripted", action="store_true", help="scripted attempts (the mechanics), no real model")
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--attempt-workers", type=int, help="a task's attempts run at once (default: all of them)")
    parser.add_argument("--tasks", default=",".join(REPOS), help=f"comma-separated, from {', '.join(REPOS)}")
    parser.add_argument("--api-base", help="OpenAI-compatible server (default: scripts/ensure-model.sh start)")
    parser.add_argument("--alias", default=os.environ.get("MINIFIX_REAL_MODEL_ALIAS", "qwen2.5-coder-1.5b"))
    parser.add_argument("--step-limit", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--call-timeout", type=int, default=300, help="seconds one model call may take")
    parser.add_argument("--wall-time", type=int, default=600, help="seconds one attempt may run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", help="keep the eval outputs (reports, trajectories) in this directory")
    parser.add_argument("--budget-minutes", type=float, help="start no task that would end after this many minutes")
    parser.add_argument("--summarize", action="store_true", help="only print the table of a --keep directory")
    return parser.parse_args()


def finished_in_both(work: Path, arms: list[int]) -> list[str]:
    """Tasks every arm finished, in the order the first arm did them."""
    done = [list(ResultStore(work / f"eval-{n}").finished()) for n in arms]
    return [name for name in done[0] if all(name in other for other in done[1:])]


def run_arms(args: argparse.Namespace, work: Path, names: list[str], model: str, base: str) -> list[str]:
    """Both arms task by task; stops before a task that would overrun `--budget-minutes`. The tasks run."""
    config = work / "overlay.yaml"
    config.write_text(yaml.safe_dump(overlay(args)))
    every = write_tasks(names, work / "tasks").read_text().splitlines()
    began, ran = time.monotonic(), []
    for name in names:
        elapsed = time.monotonic() - began
        if args.budget_minutes and ran and elapsed * (len(ran) + 1) / len(ran) > args.budget_minutes * 60:
            print(f"stopping before {name}: the next task would overrun --budget-minutes", flush=True)
            break
        one = work / "tasks" / f"{name}.jsonl"
        one.write_text(next(line for line in every if json.loads(line)["instance_id"] == name) + "\n")
        walls = [
            run_eval(one, work / f"eval-{n}", n, model, base, config, work / "data", args.attempt_workers)
            for n in (1, args.attempts)
        ]
        print(f"{name}: done in {walls[0]:.0f} s (1 attempt) and {walls[1]:.0f} s ({args.attempts})", flush=True)
        ran.append(name)
    return ran


def main() -> None:
    """Both arms, task by task, then the table (`--summarize`: only the table, from a `--keep` directory)."""
    args = parse_args()
    with ExitStack() as stack:
        work = Path(args.keep) if args.keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        work.mkdir(parents=True, exist_ok=True)
        if args.scripted:
            server = stack.enter_context(ScriptedModelServer([scripted_reply] * 20, by_turn=True, with_body=True))
            model, base = "hosted_vllm/scripted", server.api_base
        elif not args.summarize:
            model, base = f"hosted_vllm/{args.alias}", api_base(args.api_base)
        if not args.summarize:
            run_arms(args, work, args.tasks.split(","), model, base)
        names = finished_in_both(work, [1, args.attempts])
        arms = {n: arm_summary(work / f"eval-{n}", names) for n in (1, args.attempts)}
    kind = "scripted attempts" if args.scripted else f"model {args.alias}"
    print(
        f"\n{kind}; tasks {', '.join(names)}; step limit {args.step_limit}, max_tokens {args.max_tokens}, "
        f"wall time {args.wall_time} s per attempt, seed {args.seed}, "
        f"{args.attempt_workers or args.attempts} attempt(s) at a time\n"
    )
    print(table(arms))


if __name__ == "__main__":
    main()
