"""One eval task: the App's engine (agent, sandbox, config, limits) on the base commit, then grading afresh."""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.agent.config import MiniFixAgentConfig, ModelConfig
from bot.agent.loop import AgentResult
from bot.agent.model_base import Model
from bot.eval.grade import Grade, grade
from bot.eval.tasks import EvalTask
from bot.pipeline.admit.gate import guidance
from bot.pipeline.attempts.exits import SUBMITTED
from bot.pipeline.attempts.plan import Attempt, AttemptPlan, attempt_run_id
from bot.pipeline.errors import RunFailed
from bot.pipeline.git.gitops import GitError
from bot.pipeline.judge.testbed import SandboxFactory
from bot.pipeline.onhost import Planned, attempted
from bot.pipeline.runconfig import NO_FLAGS, Flags, RunConfig, resolve
from bot.pipeline.task.issue import MAX_TASK_CHARS, cap, clean
from bot.repo_config import infer
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from sandbox.base import SandboxConfig

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

    def run_config(self, task: EvalTask, repo: RepoConfig | None = None, attempts: int | None = None) -> RunConfig:
        """The task's run configuration, as the App resolves a job's (the operator's own task: nothing clamped),
        with `attempts` attempts as the flag (none: runconfig's rule for the operator's tasks, one); `repo` is the
        task's repository config with its tests inferred (`tested`), when known. A task sets no `model:`, so its
        model is the eval's own (`model_config`: the same resolution without a task)."""
        flags = replace(self.flags, attempts=attempts) if attempts else self.flags
        return resolve(self.settings, self.agent_config, repo or task.repo_config(), flags, ceilings=False)

    def trajectory_path(self, task: EvalTask) -> Path:
        """Where a task's trajectory is written (SWE-bench's layout)."""
        return self.output / "trajectories" / task.instance_id / f"{task.instance_id}.traj.json"


def solve(task: EvalTask, ctx: EvalContext) -> dict[str, Any]:
    """Run and grade one task; the report's record for it (an error with its reason, never a raise)."""
    started = time.monotonic()
    run_id = uuid.uuid4().hex[:12]
    record: dict[str, Any] = {"instance_id": task.instance_id, "repo": task.repo, "run_id": run_id}
    path = ctx.trajectory_path(task)
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-eval-{run_id}-") as tmp:
        try:  # the App's own judge, as for several attempts
            judgement = attempted(EvalDriver(task, ctx, run_id, 1, lambda _: path), Path(tmp)).judgement
        except GitError as exc:
            return record | error_record(exc, started)
        [attempt] = judgement.attempts
        if (failure := did_not_run(attempt)) is not None:
            return record | error_record(failure, started)
        chosen, refused = judgement.choice.chosen, attempt.candidate.refused
        patch = chosen.change.diff if chosen is not None and chosen.change is not None else ""
        record |= attempt_stats(attempt) | {"model_patch": patch} | ({"refused": refused} if refused else {})
        if refused:  # what the App would never push is never graded as solved
            verdict = Grade(error=f"no patch: the App refused the change ({', '.join(refused)})")
        else:
            verdict = grade_patch(task, ctx, patch, f"{run_id}-grade", Path(tmp))
    record |= {"resolved": verdict.resolved, "tests": verdict.as_json(), "seconds": since(started)}
    return record | ({"error": verdict.error} if verdict.error else {})


def tested(task: EvalTask, checkout: Path) -> tuple[RepoConfig, infer.TestPlan]:
    """The task's repository config with `test`, `reproduce` and `test_paths` inferred from its base checkout where
    it sets none, and the test plan the agent's first message names: the App's own inference (`infer.resolve`)."""
    return infer.resolve(task.repo_config(), checkout)


def grade_patch(task: EvalTask, ctx: EvalContext, patch: str, run_id: str, tmp: Path) -> Grade:
    """The patch graded in a fresh sandbox; no patch is never resolved."""
    if not patch.strip():
        return Grade(error="no patch: the agent did not submit a change")
    return grade(task, patch, ctx.sandbox, sandbox_config(task, ctx), run_id, tmp)


@dataclass(frozen=True)
class EvalDriver:
    """One task in `onhost.attempted` (the flow `mini-fix run` shares): the task's base commit, `count` attempts at
    most `ctx.attempt_workers` at once, each with the App's agent, sandbox and setup and its trajectory at
    `trajectory(index)`, the problem statement as the task."""

    task: EvalTask
    ctx: EvalContext
    run_id: str
    count: int
    trajectory: Callable[[int], Path]

    @property
    def source(self) -> str:
        return self.task.git

    @property
    def commit(self) -> str:
        return self.task.base_commit

    @property
    def secrets(self) -> list[str]:
        return self.ctx.settings.secrets

    def planned(self, checkout: Path) -> Planned:
        """The plan for the base `checkout`: the task's run configuration with its tests inferred from the clone
        (`tested`: the first message names its test, and it ranks the attempts)."""
        task, ctx, run_id, count = self.task, self.ctx, self.run_id, self.count
        config, testing = tested(task, checkout)
        resolved = ctx.run_config(task, config, count)
        paths = {attempt_run_id(run_id, k, count): self.trajectory(k) for k in range(1, count + 1)}
        plan = AttemptPlan.of(
            resolved,
            (resolved.repo, testing),
            run_id=run_id,
            factory=ctx.sandbox,
            make_model=ctx.model,
            trajectory_path=paths.__getitem__,
            meta={"repo": task.repo, "model": ctx.model_config.model_name, "eval": {"instance_id": task.instance_id}},
            cancel=ctx.cancel,  # no job-wide budget (`ceilings=False`): the agent's own limits
            parallel=ctx.attempt_workers or 0,
        )
        text = cap(clean(task.problem_statement), MAX_TASK_CHARS)
        if extra := guidance(config, checkout):
            text = f"{text}\n\n{extra}"
        return Planned(plan, text)


def did_not_run(attempt: Attempt) -> RunFailed | None:
    """Why an attempt left no agent result to report (its sandbox, setup or change failed); None when it has one."""
    if attempt.failure is None or (attempt.result is not None and attempt.result.exit_status != SUBMITTED):
        return None
    return attempt.failure


def attempt_stats(attempt: Attempt) -> dict[str, Any]:
    """An attempt's statistics for the report, from the engine's Attempt and its agent result."""
    if (failure := did_not_run(attempt)) is not None:
        return {"exit_status": "error", "error": reason(failure)}
    assert attempt.result is not None
    return _stats(attempt.result) | {"model_seconds": round(attempt.model_seconds, 1)}


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
    why = reason(exc)
    return {"resolved": False, "exit_status": "error", "error": why, "model_patch": "", "seconds": since(started)}


def reason(exc: Exception) -> str:
    """Why a task or an attempt could not run, in the report's words."""
    return f"{exc.outcome}: {exc.detail}" if isinstance(exc, RunFailed) else str(exc)


def since(started: float) -> float:
    """Seconds since `started` (monotonic), rounded for the report."""
    return round(time.monotonic() - started, 1)
