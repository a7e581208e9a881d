"""The App's plan for one job's attempts (for `engine.py`), from its resolved `RunConfig` (`AttemptPlan.of`)."""

from __future__ import annotations

from functools import partial

from bot.agent.loop import StepEvent
from bot.pipeline.attempts.plan import AttemptPlan
from bot.pipeline.capacity import Removals
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.publish.status import StatusComment
from bot.pipeline.runconfig import RunConfig
from bot.pipeline.state import RunState


def plan_for(state: RunState, deps: PipelineDeps, resolved: RunConfig, removals: Removals) -> AttemptPlan:
    """What the job's attempts share: sandbox, agent, model, budgets, slots, background removals, trajectory
    places, progress."""
    settings = deps.settings
    return AttemptPlan.of(
        resolved,
        run_id=state.run_id,
        factory=deps.sandbox,
        make_model=deps.model,
        trajectory_path=lambda run_id: settings.data_dir / "runs" / run_id / "trajectory.json",
        meta={
            "repo": state.job.repo,
            "issue": state.number,
            "job_id": state.job.id,
            "training": state.config.training,
            "model": state.model.model_name,
            "profile": state.agent.profile,
        },
        cancel=state.cancel,
        clock=deps.clock,
        slots=deps.sandbox_slots,
        removals=removals,
        mirror=deps.save_trajectory,
        on_step=partial(on_step, state.status),
        on_end=state.status.ended if state.count > 1 else _quiet,
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
