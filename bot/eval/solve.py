"""One eval task: the App's agent, sandbox, config and limits on the base commit, then grading in a fresh sandbox."""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.agent.config import MiniFixAgentConfig, ModelConfig
from bot.agent.loop import AgentResult
from bot.agent.model_base import Model
from bot.eval.grade import Grade, grade
from bot.eval.hostgit import GitFailed, base_checkout
from bot.eval.tasks import EvalTask
from bot.pipeline import execute
from bot.pipeline.admit import agent_config_for, guidance, sandbox_config_for
from bot.pipeline.execute import RunFailed
from bot.pipeline.task import MAX_TASK_CHARS, cap, clean
from bot.pipeline.testbed import SandboxFactory, SetupFailed, prepared
from bot.settings import Settings
from bot.trajectory import TrajectoryWriter
from sandbox.base import SandboxConfig, SandboxError

SUBMITTED = "Submitted"


@dataclass
class EvalContext:
    """What every task of one eval shares: the App's settings, config, model and sandbox."""

    settings: Settings
    agent_config: MiniFixAgentConfig
    model_config: ModelConfig
    model: Callable[[ModelConfig], Model]
    sandbox: SandboxFactory
    output: Path
    cancel: threading.Event

    def trajectory_path(self, task: EvalTask) -> Path:
        """Where a task's trajectory is written (SWE-bench's layout)."""
        return self.output / "trajectories" / task.instance_id / f"{task.instance_id}.traj.json"


def solve(task: EvalTask, ctx: EvalContext) -> dict[str, Any]:
    """Run and grade one task; the report's record for it (an error with its reason, never a raise)."""
    started = time.monotonic()
    run_id = uuid.uuid4().hex[:12]
    record: dict[str, Any] = {"instance_id": task.instance_id, "repo": task.repo, "run_id": run_id}
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-eval-{run_id}-") as tmp:
        try:
            result, patch = _agent(task, ctx, run_id, Path(tmp))
        except (GitFailed, SetupFailed, RunFailed, SandboxError) as exc:
            return record | _error(exc, started)
        record |= _stats(result) | {"model_patch": patch}
        verdict = (
            grade(task, patch, ctx.sandbox, _sandbox_config(task, ctx), f"{run_id}-grade", Path(tmp))
            if patch.strip()
            else Grade(error="no patch: the agent did not submit a change")
        )
    record |= {"resolved": verdict.resolved, "tests": verdict.as_json(), "seconds": _since(started)}
    return record | ({"error": verdict.error} if verdict.error else {})


def _agent(task: EvalTask, ctx: EvalContext, run_id: str, tmp: Path) -> tuple[AgentResult, str]:
    checkout = tmp / "repo"
    base_checkout(task.git, task.base_commit, checkout)
    config = agent_config_for(ctx.agent_config, ctx.settings, task.repo_config())
    writer = TrajectoryWriter(
        ctx.trajectory_path(task),
        secrets=ctx.settings.secrets,
        mini_fix={
            "run_id": run_id,
            "repo": task.repo,
            "model": ctx.model_config.model_name,
            "eval": {"instance_id": task.instance_id},
        },
    )
    text = cap(clean(task.problem_statement), MAX_TASK_CHARS)
    if extra := guidance(task.repo_config(), checkout):
        text = f"{text}\n\n{extra}"
    with (
        prepared(ctx.sandbox, _sandbox_config(task, ctx), run_id, checkout, task.repo_config()) as ready,
        execute.closed_on_cancel(ready.sandbox, ctx.cancel),  # an interrupted eval removes its containers at once
    ):
        result = execute.run_agent(
            ctx.model(ctx.model_config),
            ready.sandbox,
            config,
            text,
            trajectory=writer,
            on_step=lambda _event: None,
            cancel=ctx.cancel,
            checkout=checkout,
        )
        if result.exit_status != SUBMITTED:
            return result, ""
        # As the App takes it: the tree exported as files, diffed against the base by the host's own git.
        max_bytes = ctx.settings.max_export_bytes
        change = execute.take_change(
            ready.sandbox, checkout, tmp / "export", max_bytes=max_bytes, exclude=ready.excludes
        )
    return result, change.diff


def _sandbox_config(task: EvalTask, ctx: EvalContext) -> SandboxConfig:
    """The container the App would start for this task's repository config."""
    config = agent_config_for(ctx.agent_config, ctx.settings, task.repo_config())
    return sandbox_config_for(config, ctx.settings, task.repo_config())


def _stats(result: AgentResult) -> dict[str, Any]:
    extras = [m.get("extra", {}) for m in result.messages]
    return {
        "exit_status": result.exit_status,
        "steps": result.steps,
        "tokens": result.prompt_tokens + result.completion_tokens,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "format_errors": sum(1 for e in extras if e.get("interrupt_type") == "FormatError"),
        "timed_out_actions": sum(1 for e in extras if "timed out" in str(e.get("exception_info", ""))),
        "agent_seconds": round(result.elapsed_seconds, 1),
    }


def _error(exc: Exception, started: float) -> dict[str, Any]:
    reason = f"{exc.outcome}: {exc.detail}" if isinstance(exc, RunFailed) else str(exc)
    return {"resolved": False, "exit_status": "error", "error": reason, "model_patch": "", "seconds": _since(started)}


def _since(started: float) -> float:
    return round(time.monotonic() - started, 1)
