"""What one job's attempts share (`AttemptPlan`, frozen, made from a resolved run configuration by `AttemptPlan.of`
for every driver), what each attempt leaves (`Attempt`), and the per-attempt run id and sampling temperature."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bot.agent.config import MiniFixAgentConfig, ModelConfig
from bot.agent.loop import AgentResult, StepEvent
from bot.agent.model_base import Model
from bot.jobs import Outcome
from bot.pipeline.candidates import Candidate
from bot.pipeline.capacity import JobBudget, Removals, SandboxSlots
from bot.pipeline.change import ChangeCaps
from bot.pipeline.errors import RunFailed
from bot.pipeline.runconfig import RunConfig
from bot.repo_config.infer import TestPlan
from bot.repo_config.schema import RepoConfig
from sandbox.base import Sandbox, SandboxConfig

TAKE_OUT_SECONDS = 30.0
"""At the job's wall time's end, how long past one action's own timeout the attempts have to reach their next step
and have their work taken out (a model reply in flight, the export, the host's diff) before their containers are
closed: an action running then ends within its timeout (the sandbox kills it), so a step under way still counts."""


def attempt_run_id(run_id: str, index: int, count: int) -> str:
    """Attempt `index`'s run id: the job's own when it has one attempt (links stay as they were), else `<id>-<k>`."""
    return run_id if count == 1 else f"{run_id}-{index}"


def temperature_for(agent: MiniFixAgentConfig, index: int, count: int) -> float | None:
    """Attempt `index`'s sampling temperature from the schedule (cycled); None: the model config's own."""
    schedule = agent.agent.attempt_temperatures
    if count == 1 or not schedule:
        return None
    return schedule[(index - 1) % len(schedule)]


def model_for(model: ModelConfig, temperature: float | None) -> ModelConfig:
    """The model config with this attempt's temperature (unchanged for None)."""
    if temperature is None:
        return model
    return model.model_copy(update={"model_kwargs": {**model.model_kwargs, "temperature": temperature}})


@dataclass
class Attempt:
    """One attempt's run: the candidate the App judges, and what the agent left for the PR."""

    candidate: Candidate
    result: AgentResult | None = None
    failure: RunFailed | None = None
    trajectory: Path | None = None
    model_seconds: float = 0.0  # time spent waiting for the model's replies
    seconds: float = 0.0  # wall time from its turn to its end: sandbox, setup, agent, change

    @property
    def outcome(self) -> Outcome | None:
        """How the attempt ended when it left no change (None: it left one)."""
        if self.failure is not None:
            return self.failure.outcome
        return None if self.candidate.submitted else Outcome.EMPTY_DIFF


def _no_step(_attempt: int, _event: StepEvent) -> None:
    return None


def _no_end(_attempt: int, _how: str) -> None:
    return None


@dataclass(frozen=True)
class AttemptPlan:
    """What every attempt of one job shares; built once (`of`), never changed: a variant is a new plan (`settled`)."""

    count: int
    run_id: str
    factory: Callable[[SandboxConfig, str], Sandbox]
    sandbox_config: SandboxConfig
    agent: MiniFixAgentConfig
    model: ModelConfig
    make_model: Callable[[ModelConfig], Model]
    config: RepoConfig
    networked: bool  # the setup phase has the filtering proxy's network
    max_export_bytes: int
    trajectory_path: Callable[[str], Path]  # run id -> where its trajectory file goes
    meta: dict[str, Any]  # the trajectory's `mini_fix` block (run id and attempt added per attempt)
    budget: JobBudget
    slots: SandboxSlots = field(default_factory=lambda: SandboxSlots(0))
    removals: Removals | None = None  # the job's background removals (None: each container removed at once)
    mirror: Callable[[str, str], None] | None = None  # (run id, JSON): the shared trajectory store
    on_step: Callable[[int, StepEvent], None] = _no_step
    on_end: Callable[[int, str], None] = _no_end
    testing: dict[str, str] = field(default_factory=dict)  # the test command and how to run one test, for the task
    caps: ChangeCaps = field(default_factory=ChangeCaps)  # what a tree may cost the worker before it is diffed
    parallel: int = 0  # at most this many attempts at once, in attempt order (0: all; eval's --attempt-workers)
    setup_tolerant: bool = False  # an inferred setup (`RunConfig.setup_inferred`): its failure does not end the run

    @classmethod
    def of(
        cls,
        resolved: RunConfig,
        tested: tuple[RepoConfig, TestPlan] | None = None,
        *,
        run_id: str,
        factory: Callable[[SandboxConfig, str], Sandbox],
        make_model: Callable[[ModelConfig], Model],
        trajectory_path: Callable[[str], Path],
        meta: dict[str, Any],
        cancel: threading.Event,
        clock: Callable[[], float] = time.monotonic,
        slots: SandboxSlots | None = None,
        mirror: Callable[[str, str], None] | None = None,
        on_step: Callable[[int, StepEvent], None] = _no_step,
        on_end: Callable[[int, str], None] = _no_end,
        parallel: int = 0,
        removals: Removals | None = None,
    ) -> AttemptPlan:
        """The one way a plan is made, for the App, `mini-fix run` and `mini-fix eval`: what the run configuration
        settles (attempts, sandbox, agent, model, repository config, setup network, caps) from `resolved`; the tests
        from `tested` (`infer.resolve` of `resolved.repo`; None: not known before the clone); what is the driver's
        own (sandboxes, model client, trajectory places, cancel flag, slots, progress) given. The job's budget is
        the run configuration's (`job_tokens`, `job_seconds`), watched on the driver's cancel flag and clock, with the
        quotas' bounds for its model (`quota_notes.bounds`); at its wall time's end the containers are left for one
        action's timeout and `TAKE_OUT_SECONDS` more."""
        plan = cls(
            count=resolved.attempts,
            run_id=run_id,
            factory=factory,
            sandbox_config=resolved.sandbox,
            agent=resolved.agent,
            model=resolved.model,
            make_model=make_model,
            config=resolved.repo,
            networked=resolved.setup_network,
            setup_tolerant=resolved.setup_inferred,
            max_export_bytes=resolved.max_export_bytes,
            trajectory_path=trajectory_path,
            meta=meta,
            budget=JobBudget(
                tokens=resolved.job_tokens,
                seconds=resolved.job_seconds,
                cancel=cancel,
                clock=clock,
                model=resolved.model.model_name,  # its price turns a cost quota's headroom into a bound
                grace=resolved.sandbox.timeout + TAKE_OUT_SECONDS,
            ),
            slots=slots or SandboxSlots(0),
            mirror=mirror,
            on_step=on_step,
            on_end=on_end,
            caps=resolved.caps,
            parallel=parallel,
            removals=removals,
        )
        return plan if tested is None else plan.settled(resolved, tested)

    def settled(self, resolved: RunConfig, tested: tuple[RepoConfig, TestPlan]) -> AttemptPlan:
        """This plan once the checkout settled what only it can tell: the setup (a repository's own, else inferred
        from its build files: `runconfig.with_setup`) with its sandbox, and the tests (`infer.resolve`: the config
        with `test`, `reproduce` and `test_paths` filled in, and the plan the agent's task names)."""
        config, testing = tested
        return replace(
            self,
            sandbox_config=resolved.sandbox,
            config=config,
            networked=resolved.setup_network,
            setup_tolerant=resolved.setup_inferred,
            testing=testing.template_vars(),
        )
