"""The App's plan for one job's attempts (for `engine.py`), from its resolved `RunConfig` (`AttemptPlan.of`)."""

from __future__ import annotations

from functools import partial

from bot.agent.loop import StepEvent
from bot.pipeline.attempts.plan import AttemptPlan
from bot.pipeline.capacity import Removals
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.publish.status import StatusComment
from bot.pipeline.runconfig import RunConfig
from bot.pipeline.state import Given


def plan_for(
    given: Given, status: StatusComment, deps: PipelineDeps, resolved: RunConfig, removals: Removals
) -> AttemptPlan:
    """What the job's attempts share: sandbox, agent, model, budgets, slots, background removals, trajectory
    places, progress."""
    settings = deps.settings
    return AttemptPlan.of(
        resolved,
        run_id=given.run_id,
        factory=deps.sandbox,
        make_model=deps.model,
        trajectory_path=lambda run_id: settings.data_dir / "runs" / run_id / "trajectory.json",
        meta={
            "repo": given.job.repo,
            "issue": given.number,
            "job_id": given.job.id,
            "training": resolved.repo.training,
            "model": resolved.model.model_name,
            "profile": resolved.agent.profile,
        },
        cancel=given.cancel,
        clock=deps.clock,
        slots=deps.sandbox_slots,
        removals=removals,
        mirror=deps.save_trajectory,
        on_step=partial(on_step, status),
        on_end=status.ended if resolved.attempts > 1 else _quiet,
    )


def _quiet(_attempt: int, _how: str) -> None:
    """One attempt's end says nothing: its status comment has no attempts table."""


def on_step(status: StatusComment, attempt: int, event: StepEvent) -> None:
    """An attempt's step, shown in the status comment."""
    status.progress(
        attempt=attempt,
        step=event.step,
        limit=event.step_limit,
        command=event.command,
        tokens=event.prompt_tokens + event.completion_tokens,
        elapsed=event.elapsed_seconds,
    )
