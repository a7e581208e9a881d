"""mini-fix against mini-swe-agent 2.4.6 itself: the same model server, the same tasks, the same limits, in turn.

Each task (bench/quality_tasks.py: Python, JavaScript, Go) is built fresh for each system. mini-fix runs as a user
runs it, `mini-fix run` with prompts/agent.yaml (the App's engine, real sandbox); mini-swe-agent runs in-process
with its own `mini_textbased.yaml`, its own `DefaultAgent` and `LitellmTextbasedModel`, its commands executed in the
same sandbox image (mini-fix's DockerSandbox behind mini-swe-agent's Environment protocol: its DockerEnvironment
would `docker run` with the network on and as root). Both patches are graded the same way: applied to a fresh copy
with the hidden test, run in a fresh network-less sandbox. Tool-call configs are not run: llama.cpp's CPU server
here writes a tool call as JSON text and returns no `tool_calls` (see bench/RESULTS.md).

    .venv/bin/python bench/quality.py [--tasks calc,range] [--systems mini-fix,mini-swe-agent]
        [--step-limit 10] [--max-tokens 256] [--output /tmp/quality]
    .venv/bin/python bench/quality.py --report /tmp/quality     # the table again from the JSON lines

A run writes one JSON line per (task, system) to OUTPUT/results.jsonl as it goes, so a run cut short still reports.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")  # a self-hosted model has no price

from bench.quality_report import report  # noqa: E402
from bench.quality_tasks import TASKS, QualityTask, write_files  # noqa: E402
from bench.real_model import api_base  # noqa: E402  the server: --api-base, else scripts/ensure-model.sh's
from bot.agent.config import DEFAULT_CONFIG_PATH  # noqa: E402
from sandbox.base import SandboxConfig  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402

SYSTEMS = ("mini-fix", "mini-swe-agent")
IMAGE = "mini-fix-sandbox:latest"
ACTION_TIMEOUT = 120  # seconds per command, both systems (prompts/agent.yaml's)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def build(task: QualityTask, where: Path) -> Path:
    """The task's repository as a git checkout with one commit."""
    write_files(task, where)
    git(where, "init", "-q", "-b", "main")
    git(where, "add", "-A")
    git(where, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "Initial commit")
    return where


def run_mini_fix(task: QualityTask, checkout: Path, work: Path, args: argparse.Namespace, base: str) -> dict[str, Any]:
    """`mini-fix run` on the checkout; its patch and statistics from what it wrote."""
    out = work / "out"
    kwargs = {"temperature": 0.0, "max_tokens": args.max_tokens, "timeout": args.call_timeout}
    specs = [str(args.agent_config), f"agent.step_limit={args.step_limit}"]
    specs += [f"model.model_kwargs.{k}={v}" for k, v in kwargs.items()]
    command = [sys.executable, "-m", "bot.cli", "run", "--repo", str(checkout), "--task", task.issue]
    command += ["--model", f"hosted_vllm/{args.alias}", "--api-base", base, "--output", str(out)]
    for spec in specs:
        command += ["-c", spec]
    env = {**os.environ, "MINIFIX_DATA_DIR": str(work / "data")}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.wall_time + 600)
    trajectory_file = out / "trajectory.json"
    if not trajectory_file.exists():
        return {"exit_status": f"no trajectory (exit {done.returncode}): {done.stderr[-500:]}", "patch": ""}
    data = json.loads(trajectory_file.read_text())
    messages, stats = data["messages"], data["mini_fix"]
    patch = (out / "patch.diff").read_text() if (out / "patch.diff").exists() else ""
    return {
        "exit_status": data["info"]["exit_status"],
        "steps": stats["steps"],
        "prompt_tokens": stats["prompt_tokens"],
        "completion_tokens": stats["completion_tokens"],
        "format_errors": sum(1 for m in messages if m.get("extra", {}).get("interrupt_type") == "FormatError"),
        "refused_repeats": sum(1 for m in messages if m.get("extra", {}).get("interrupt_type") == "RepeatedFailure"),
        "first_prompt_tokens": first_prompt(messages),
        "patch": patch,
        "trajectory": data,
    }


def first_prompt(messages: list[dict[str, Any]]) -> int:
    """Prompt tokens of the first model call (what the system and instance templates cost), 0 when unknown."""
    for m in messages:
        usage = (m.get("extra", {}).get("response") or {}).get("usage") or m.get("extra", {}).get("usage") or {}
        if usage.get("prompt_tokens"):
            return int(usage["prompt_tokens"])
    return 0


class SandboxEnvironment:
    """mini-swe-agent's Environment protocol on mini-fix's sandbox: each action a fresh process in /testbed."""

    def __init__(self, sandbox: DockerSandbox, env: dict[str, str], timeout: int) -> None:
        from minisweagent.environments.local import LocalEnvironment

        self.sandbox, self.timeout = sandbox, timeout
        self._finished = LocalEnvironment._check_finished  # upstream's own submission check
        self.config = {"cwd": "/testbed", "env": env, "timeout": timeout}

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        result = self.sandbox.execute(action.get("command", ""), timeout=timeout or self.timeout, cwd=cwd or None)
        output = {"output": result.output, "returncode": result.returncode, "exception_info": result.exception_info}
        self._finished(self, output)
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {**self.config, **platform.uname()._asdict(), **self.sandbox.template_vars(), **kwargs}

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"environment": self.config, "environment_type": "bench.SandboxEnvironment"}}}


def counting_model(**config: Any) -> Any:
    """mini-swe-agent's LitellmTextbasedModel, counting every call's usage and its format errors."""
    from minisweagent.exceptions import FormatError
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    class Counting(LitellmTextbasedModel):  # type: ignore[misc]
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.prompt_tokens = self.completion_tokens = self.format_errors = self.calls = 0
            self.first_prompt = 0

        def _query(self, messages: list[dict[str, str]], **kw: Any) -> Any:
            response = super()._query(messages, **kw)
            usage = getattr(response, "usage", None)
            self.calls += 1
            prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
            self.first_prompt = self.first_prompt or prompt
            self.prompt_tokens += prompt
            self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
            return response

        def query(self, messages: list[dict[str, str]], **kw: Any) -> dict[str, Any]:
            try:
                return dict(super().query(messages, **kw))
            except FormatError:
                self.format_errors += 1
                raise

    return Counting(**config)


def run_mswea(task: QualityTask, checkout: Path, args: argparse.Namespace, base: str) -> dict[str, Any]:
    """mini-swe-agent's DefaultAgent with its mini_textbased.yaml, in the same sandbox image."""
    import minisweagent
    from minisweagent.agents.default import DefaultAgent

    upstream = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / "mini_textbased.yaml").read_text())
    agent_config = {**upstream["agent"], "step_limit": args.step_limit, "cost_limit": 0}
    model_config = {**upstream["model"], "model_name": f"hosted_vllm/{args.alias}", "cost_tracking": "ignore_errors"}
    model_config["model_kwargs"] = {
        **upstream["model"].get("model_kwargs", {}),
        "api_base": base,
        "temperature": 0.0,
        "max_tokens": args.max_tokens,
        "timeout": args.call_timeout,
    }
    env = dict(upstream.get("environment", {}).get("env", {}))
    sandbox = DockerSandbox.start(
        SandboxConfig(image=IMAGE, env=env, timeout=ACTION_TIMEOUT), f"q-{uuid.uuid4().hex[:8]}"
    )
    try:
        sandbox.copy_in(checkout)
        model = counting_model(**model_config)
        agent = DefaultAgent(model, SandboxEnvironment(sandbox, env, ACTION_TIMEOUT), **agent_config)
        try:
            ended = agent.run(task.issue)
            status = str(ended.get("exit_status", ""))
        except Exception as exc:  # the agent re-raises what it did not handle; the run is still reported
            status = f"{type(exc).__name__}: {exc}"[:300]
        patch = sandbox.diff()
    finally:
        sandbox.close()
    return {
        "exit_status": status,
        "steps": model.calls,
        "prompt_tokens": model.prompt_tokens,
        "completion_tokens": model.completion_tokens,
        "format_errors": model.format_errors,
        "refused_repeats": 0,
        "first_prompt_tokens": model.first_prompt,
        "patch": patch,
        "trajectory": {"messages": agent.messages},
    }


def grade(task: QualityTask, patch: str, work: Path) -> bool:
    """The patch on a fresh copy with the hidden test, run in a fresh network-less sandbox."""
    if not patch.strip():
        return False
    copy = build(task, work / "grade")
    (work / "candidate.diff").write_text(patch, errors="surrogateescape")
    if subprocess.run(["git", "apply", str(work / "candidate.diff")], cwd=copy, capture_output=True).returncode:
        return False
    (copy / task.hidden_path).write_text(task.hidden_test)
    sandbox = DockerSandbox.start(SandboxConfig(image=IMAGE, timeout=300), f"q-grade-{uuid.uuid4().hex[:8]}")
    try:
        sandbox.copy_in(copy)
        return sandbox.execute(task.grade_command, timeout=300).returncode == 0
    finally:
        sandbox.close()


def run_one(task: QualityTask, system: str, args: argparse.Namespace, base: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"quality-{task.name}-") as tmp:
        work = Path(tmp)
        checkout = build(task, work / "repo")
        began = time.monotonic()
        if system == "mini-fix":
            row = run_mini_fix(task, checkout, work, args, base)
        else:
            row = run_mswea(task, checkout, args, base)
        wall = round(time.monotonic() - began, 1)
        resolved = grade(task, row["patch"], work)
    trajectory = row.pop("trajectory", None)
    if trajectory is not None:
        keep = args.output / "trajectories" / f"{system}-{task.name}.json"
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_text(json.dumps(trajectory, default=str))
    label = args.label if system == "mini-fix" and args.label else system
    return {"task": task.name, "language": task.language, "system": label, "resolved": resolved,
            "wall_seconds": wall, **row}  # fmt: skip


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task names")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--step-limit", type=int, default=10)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--call-timeout", type=int, default=300)
    p.add_argument("--wall-time", type=int, default=1200)
    p.add_argument("--api-base")
    p.add_argument("--alias", default=os.environ.get("MINIFIX_REAL_MODEL_ALIAS", "qwen2.5-coder-1.5b"))
    p.add_argument("--output", type=Path, default=Path("/tmp/quality"))
    p.add_argument("--agent-config", type=Path, default=DEFAULT_CONFIG_PATH, help="mini-fix's agent config file")
    p.add_argument("--label", default="", help="the mini-fix row's name in the results (e.g. mini-fix@before)")
    p.add_argument("--report", type=Path, nargs="+", help="print the table from earlier runs' directories and exit")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    if args.report:
        print(report(*(d / "results.jsonl" for d in args.report)))
        return
    base = api_base(args.api_base)
    args.output.mkdir(parents=True, exist_ok=True)
    results = args.output / "results.jsonl"
    load = os.getloadavg()[0]
    print(f"model {args.alias} at {base}; steps {args.step_limit}, max_tokens {args.max_tokens}; load {load:.2f}")
    for name in args.tasks.split(","):
        for system in args.systems.split(","):  # interleaved task by task: a cut-short run still compares
            row = run_one(TASKS[name], system, args, base)
            line = {k: v for k, v in row.items() if k != "patch"} | {"patch_lines": row["patch"].count("\n")}
            with results.open("a") as out:
                out.write(json.dumps(line) + "\n")
            print(f"{name:8} {system:15} resolved={row['resolved']!s:5} steps={row.get('steps')} "
                  f"tokens={row.get('prompt_tokens', 0) + row.get('completion_tokens', 0)} {row['exit_status']}",
                  flush=True)  # fmt: skip
    print(f"load at the end {os.getloadavg()[0]:.2f}")
    print(report(results))


if __name__ == "__main__":
    main()
