"""The agent with a real model: resolve rate, steps, tokens, wall time and format errors on small buggy repositories.

Each task is a small repository built from text (tests/support/buggy_repos.py) with one bug, an issue to fix and a
hidden test the model never sees. Every run is a real `mini-fix run` (the production litellm path, the real Docker
sandbox) against an OpenAI-compatible server, by default the CPU llama.cpp server of scripts/ensure-model.sh.
Run by hand (minutes per task on a CPU):

    .venv/bin/python bench/real_model.py [--tasks calc,shout] [--temperatures 0,0.7] [--seeds 1]
        [--agent-configs bench/real_model_before.yaml,default] [--step-limit 8] [--max-tokens 256]
        [--wall-time 240]

Several agent configs (`default` is prompts/agent.yaml) run side by side, interleaved task by task, so a run cut
short still compares them on the same tasks. A task counts as resolved when the hidden test passes on the run's
patch, submitted or not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bot.agent.config import DEFAULT_CONFIG_PATH  # noqa: E402
from tests.support.buggy_repos import REPOS, BuggyRepo, build, resolved  # noqa: E402


@dataclass
class Outcome:
    """One run of one task."""

    config: str
    task: str
    temperature: float
    seed: int
    exit_status: str
    resolved: bool
    steps: int
    format_errors: int
    prompt_tokens: int
    completion_tokens: int
    wall_seconds: float
    model_seconds: float


def api_base(given: str | None) -> str:
    """The server to use: --api-base, else the one scripts/ensure-model.sh starts (or finds running)."""
    if given:
        return given
    done = subprocess.run([str(ROOT / "scripts" / "ensure-model.sh"), "start"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"scripts/ensure-model.sh start failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def overlay(args: argparse.Namespace, temperature: float, seed: int) -> dict[str, Any]:
    """The budget and sampling settings laid over the agent config for one run."""
    kwargs = {"temperature": temperature, "seed": seed, "max_tokens": args.max_tokens, "timeout": args.call_timeout}
    return {
        "agent": {"step_limit": args.step_limit, "wall_time_limit_seconds": args.wall_time},
        "model": {"model_kwargs": kwargs},
    }


def config_label(agent_config: str) -> str:
    """A short name for an agent config in the table."""
    return "default" if agent_config == "default" else Path(agent_config).stem


def run_once(
    args: argparse.Namespace, agent_config: str, repo: BuggyRepo, temperature: float, seed: int, base: str
) -> Outcome:
    """Build the repository, run `mini-fix run` on it, read its trajectory and check the patch."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{repo.name}-") as tmp:
        work = Path(tmp)
        checkout = build(repo, work / repo.name)
        config = work / "overlay.yaml"
        config.write_text(yaml.safe_dump(overlay(args, temperature, seed)))
        env = {**os.environ, "MINIFIX_DATA_DIR": str(work / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        # --config replaces our default (mini-swe-agent's -c): name the base config, then the overlay.
        base_config = DEFAULT_CONFIG_PATH if agent_config == "default" else Path(agent_config).resolve()
        command = [
            sys.executable,
            "-m",
            "bot.cli",
            "run",
            "--repo",
            str(checkout),
            "--task",
            repo.issue,
            "--model",
            f"hosted_vllm/{args.alias}",
            "--api-base",
            base,
            "--config",
            str(base_config),
            "--config",
            str(config),
            "--output",
            str(work / "out"),
        ]
        began = time.monotonic()
        subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.wall_time + 600)
        wall = time.monotonic() - began
        trajectory = json.loads((work / "out" / "trajectory.json").read_text())
        patch = (work / "out" / "patch.diff").read_text() if (work / "out" / "patch.diff").exists() else ""
        if args.keep:
            keep = Path(args.keep) / f"{config_label(agent_config)}-{repo.name}-t{temperature}-s{seed}.json"
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_text(json.dumps(trajectory))
        outcome = summarise(trajectory, repo, temperature, seed, wall, resolved(repo, patch, work))
        outcome.config = config_label(agent_config)
        return outcome


def model_seconds(messages: list[dict[str, Any]], started_at: str) -> float:
    """Time spent waiting for the model: from each message that ends a step to the next reply's timestamp."""
    total, last = 0.0, datetime.fromisoformat(started_at).timestamp()
    for message in messages:
        stamp = message.get("extra", {}).get("timestamp")
        if stamp is None:
            continue
        replied = message["role"] == "assistant" or message.get("extra", {}).get("interrupt_type") == "FormatError"
        if replied:
            total += stamp - last
        last = stamp
    return total


def summarise(data: dict[str, Any], repo: BuggyRepo, temperature: float, seed: int, wall: float, ok: bool) -> Outcome:
    """One Outcome from a trajectory."""
    messages, stats = data["messages"], data["mini_fix"]
    errors = sum(1 for m in messages if m.get("extra", {}).get("interrupt_type") == "FormatError")
    return Outcome(
        "",
        repo.name,
        temperature,
        seed,
        data["info"]["exit_status"],
        ok,
        stats["steps"],
        errors,
        stats["prompt_tokens"],
        stats["completion_tokens"],
        wall,
        model_seconds(messages, stats["started_at"]),
    )


def table(outcomes: list[Outcome]) -> str:
    """The per-run table, then one line of totals per agent config, as Markdown."""
    lines = [
        "| config | task | temp | seed | exit status | resolved | steps | format errors | prompt tok "
        "| completion tok | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.config} | {o.task} | {o.temperature} | {o.seed} | {o.exit_status} | {'yes' if o.resolved else 'no'} "
            f"| {o.steps} | {o.format_errors} | {o.prompt_tokens} | {o.completion_tokens} | {o.wall_seconds:.0f} |"
        )
    lines.append("")
    for config in dict.fromkeys(o.config for o in outcomes):
        lines.append(f"{config}: {totals([o for o in outcomes if o.config == config])}")
    return "\n".join(lines)


def totals(outcomes: list[Outcome]) -> str:
    """Resolve rate, format errors per step, steps, model latency and throughput of some runs."""
    steps = sum(o.steps for o in outcomes) or 1
    errors = sum(o.format_errors for o in outcomes)
    model_time = sum(o.model_seconds for o in outcomes) or 1.0
    return (
        f"resolved {sum(o.resolved for o in outcomes)}/{len(outcomes)}; submitted "
        f"{sum(o.exit_status == 'Submitted' for o in outcomes)}/{len(outcomes)}; format errors per step "
        f"{errors / steps:.2f} ({errors}/{steps}); mean steps {steps / max(len(outcomes), 1):.1f}; "
        f"model latency per step {model_time / steps:.1f} s; completion "
        f"{sum(o.completion_tokens for o in outcomes) / model_time:.1f} tok/s of model time; "
        f"wall {sum(o.wall_seconds for o in outcomes):.0f} s"
    )


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(REPOS), help=f"comma-separated, from {', '.join(REPOS)}")
    parser.add_argument("--temperatures", default="0,0.7")
    parser.add_argument("--seeds", default="1", help="comma-separated sampling seeds")
    parser.add_argument(
        "--agent-configs", default="default", help="comma-separated agent config files; `default` = prompts/agent.yaml"
    )
    parser.add_argument("--api-base", help="OpenAI-compatible server (default: scripts/ensure-model.sh start)")
    parser.add_argument("--alias", default=os.environ.get("MINIFIX_REAL_MODEL_ALIAS", "qwen2.5-coder-1.5b"))
    parser.add_argument("--step-limit", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--call-timeout", type=int, default=180, help="seconds one model call may take")
    parser.add_argument("--wall-time", type=int, default=240, help="seconds one run may take")
    parser.add_argument("--keep", help="directory to keep each run's trajectory in")
    return parser.parse_args()


def main() -> None:
    """Run every task at every temperature and seed with every config, one at a time, then print the table."""
    args = parse_args()
    base = api_base(args.api_base)
    outcomes = []
    for name in args.tasks.split(","):
        for temperature in (float(t) for t in args.temperatures.split(",")):
            for seed in (int(s) for s in args.seeds.split(",")):
                for agent_config in args.agent_configs.split(","):
                    outcome = run_once(args, agent_config, REPOS[name], temperature, seed, base)
                    print(
                        f"{outcome.config} {outcome.task} t={temperature} seed={seed}: {outcome.exit_status}, "
                        f"resolved={outcome.resolved}, {outcome.steps} steps, {outcome.format_errors} format errors, "
                        f"{outcome.completion_tokens} completion tokens, {outcome.wall_seconds:.0f}s",
                        flush=True,
                    )
                    outcomes.append(outcome)
    print(
        f"\nmodel {args.alias} at {base}; max_tokens {args.max_tokens}, step limit {args.step_limit}, "
        f"wall time {args.wall_time} s per run\n"
    )
    print(table(outcomes))


if __name__ == "__main__":
    main()
