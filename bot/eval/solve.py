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
from bot.agent.model_base import Model, ModelReply
from bot.eval.grade import Grade, grade
from bot.eval.hostgit import GitFailed, base_checkout
from bot.eval.tasks import EvalTask
from bot.pipeline import execute
from bot.pipeline.admit import guidance
from bot.pipeline.change import Change
from bot.pipeline.errors import RunFailed, SetupFailed
from bot.pipeline.runconfig import NO_FLAGS, Flags, RunConfig, resolve
from bot.pipeline.task import MAX_TASK_CHARS, cap, clean
from bot.pipeline.testbed import SandboxFactory, prepared
from bot.settings import Settings
from bot.trajectory import TrajectoryWriter
from sandbox.base import SandboxConfig, SandboxError

SUBMITTED = "Submitted"
# Endings that say nothing about the model's skill: a rerun tries these tasks again.
RETRIED_ON_RESUME = {"ModelUnavailable", "ModelTimeout", "Cancelled"}


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
    attempts: int | None = None  # `--attempts N`: N attempts per task, verified and chosen; None = one, as before
    attempt_workers: int | None = None  # `--attempt-workers K`: a task's attempts run at once; None = all N
    flags: Flags = NO_FLAGS  # the command line's, for each task's run configuration

    def run_config(self, task: EvalTask) -> RunConfig:
        """The task's run configuration, as the App resolves a job's (the operator's own task: nothing clamped)."""
        return resolve(self.settings, self.agent_config, task.repo_config(), self.flags, ceilings=False)

    def trajectory_path(self, task: EvalTask) -> Path:
        """Where a task's trajectory is written (SWE-bench's layout)."""
        return self.output / "trajectories" / task.instance_id / f"{task.instance_id}.traj.json"


def solve(task: EvalTask, ctx: EvalContext) -> dict[str, Any]:
    """Run and grade one task; the report's record for it (an error with its reason, never a raise)."""
    started = time.monotonic()
    run_id = uuid.uuid4().hex[:12]
    record: dict[str, Any] = {"instance_id": task.instance_id, "repo": task.repo, "run_id": run_id}
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-eval-{run_id}-") as tmp:
        checkout = Path(tmp) / "repo"
        try:
            base_checkout(task.git, task.base_commit, checkout)
            attempt = run_attempt(task, ctx, run_id, Path(tmp), checkout=checkout)
        except (GitFailed, SetupFailed, RunFailed, SandboxError) as exc:
            return record | error_record(exc, started)
        patch = attempt.change.diff if attempt.change else ""
        record |= attempt.stats | {"model_patch": patch}
        verdict = grade_patch(task, ctx, patch, f"{run_id}-grade", Path(tmp))
    record |= {"resolved": verdict.resolved, "tests": verdict.as_json(), "seconds": since(started)}
    return record | ({"error": verdict.error} if verdict.error else {})


def grade_patch(task: EvalTask, ctx: EvalContext, patch: str, run_id: str, tmp: Path) -> Grade:
    """The patch graded in a fresh sandbox; no patch is never resolved."""
    if not patch.strip():
        return Grade(error="no patch: the agent did not submit a change")
    return grade(task, patch, ctx.sandbox, sandbox_config(task, ctx), run_id, tmp)


@dataclass
class Attempt:
    """One agent run on a task: how it ended, its change (None unless it submitted) and its statistics."""

    result: AgentResult
    change: Change | None
    stats: dict[str, Any]


class TimedModel:
    """A model that adds up the time spent waiting for its replies (the model-time cost of an eval)."""

    def __init__(self, model: Model) -> None:
        self.model, self.name, self.seconds = model, model.name, 0.0

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """The wrapped model's reply, timed."""
        began = time.monotonic()
        try:
            return self.model.query(messages)
        finally:
            self.seconds += time.monotonic() - began


def run_attempt(
    task: EvalTask,
    ctx: EvalContext,
    run_id: str,
    tmp: Path,
    *,
    checkout: Path,
    model_config: ModelConfig | None = None,
    trajectory: Path | None = None,
) -> Attempt:
    """The App's agent on the base `checkout` in its own sandbox; the change as the App takes it out."""
    resolved = ctx.run_config(task)
    config = resolved.agent
    model_config = model_config or ctx.model_config
    writer = TrajectoryWriter(
        trajectory or ctx.trajectory_path(task),
        secrets=ctx.settings.secrets,
        mini_fix={
            "run_id": run_id,
            "repo": task.repo,
            "model": model_config.model_name,
            "eval": {"instance_id": task.instance_id},
        },
    )
    text = cap(clean(task.problem_statement), MAX_TASK_CHARS)
    if extra := guidance(task.repo_config(), checkout):
        text = f"{text}\n\n{extra}"
    model = TimedModel(ctx.model(model_config))
    with (
        prepared(ctx.sandbox, resolved.sandbox, run_id, checkout, task.repo_config()) as ready,
        execute.closed_on_cancel(ready.sandbox, ctx.cancel),  # an interrupted eval removes its containers at once
    ):
        result = execute.run_agent(
            model,
            ready.sandbox,
            config,
            text,
            trajectory=writer,
            on_step=lambda _event: None,
            cancel=ctx.cancel,
            checkout=checkout,
        )
        change = None
        if result.exit_status == SUBMITTED:
            # As the App takes it: the tree exported as files, diffed against the base by the host's own git.
            export = tmp / f"export-{run_id}"
            change = execute.take_change(
                ready.sandbox,
                checkout,
                export,
                max_bytes=resolved.max_export_bytes,
                exclude=ready.excludes,
                caps=resolved.caps,
            )
    return Attempt(result, change, _stats(result) | {"model_seconds": round(model.seconds, 1)})


def sandbox_config(task: EvalTask, ctx: EvalContext) -> SandboxConfig:
    """The container the App would start for this task's repository config."""
    return ctx.run_config(task).sandbox


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


def error_record(exc: Exception, started: float) -> dict[str, Any]:
    """A task's record when it could not run: the outcome and its detail, never resolved."""
    reason = f"{exc.outcome}: {exc.detail}" if isinstance(exc, RunFailed) else str(exc)
    return {"resolved": False, "exit_status": "error", "error": reason, "model_patch": "", "seconds": since(started)}


def since(started: float) -> float:
    """Seconds since `started` (monotonic), rounded for the report."""
    return round(time.monotonic() - started, 1)
