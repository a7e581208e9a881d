"""Several attempts at one job, in parallel: each its own sandbox, sampling temperature, trajectory and run id.

The attempts share the worker's one clone read-only (it is copied into each sandbox and is the base of each
host-side diff), the job's cancel flag (`/agent stop` ends them all at once) and the job's total budget. Each
holds one of the worker's sandbox slots (`capacity.SandboxSlots`) while its container lives; a job with more attempts
than free slots runs the rest as slots come free. The one engine: the App, `mini-fix run` and `mini-fix eval` run here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import structlog

from bot.agent.loop import AgentResult, StepEvent
from bot.jobs import Outcome
from bot.pipeline.attempts import execute, exits
from bot.pipeline.attempts.execute import EarlySandbox
from bot.pipeline.attempts.plan import Attempt, AttemptPlan, attempt_run_id, model_for, temperature_for
from bot.pipeline.candidates import Candidate
from bot.pipeline.capacity import Turns, remove
from bot.pipeline.change import Change
from bot.pipeline.errors import RunFailed
from bot.trajectory import TrajectoryWriter
from sandbox.base import Sandbox

STOP_WAIT = 30.0  # seconds an interrupted job waits for its attempts to remove their containers
log = structlog.get_logger(__name__)


class Attempts:
    """The attempts of one job: containers started early where a slot is free, then the agents in parallel."""

    def __init__(self, plan: AttemptPlan) -> None:
        self.plan = plan
        self._lock = threading.Lock()
        self._holding: set[int] = set()  # attempts holding a slot
        self._turns, self._turned = Turns(plan.parallel), set[int]()  # attempts holding their turn
        self._early: dict[int, EarlySandbox] = {}
        for index in range(1, plan.count + 1):
            if 0 < plan.parallel < index or not self._turns.take(index, plan.budget.stop):
                break
            self._turned.add(index)
            if not plan.slots.try_take():
                break
            self._holding.add(index)
            self._early[index] = EarlySandbox(plan.factory, plan.sandbox_config, self.run_id(index))

    def run_id(self, index: int) -> str:
        """Attempt `index`'s run id."""
        return attempt_run_id(self.plan.run_id, index, self.plan.count)

    def run(
        self, task: str, checkout: Path, scratch: Path, secrets: list[str], settled: AttemptPlan | None = None
    ) -> list[Attempt]:
        """Run every attempt (each in its own thread) and return them in order, once all have ended; `settled`: the
        plan as the checkout settled it (`AttemptPlan.settled`: the App's setup and tests, known after the clone
        these containers started during), else the plan they started with."""
        if settled is not None:
            self._settle(settled)
        results: dict[int, Attempt] = {}
        go = partial(self._run_one, task=task, checkout=checkout, scratch=scratch, secrets=secrets, into=results)
        threads = [
            threading.Thread(target=go, args=(index,), name=f"attempt-{index}", daemon=True)
            for index in range(1, self.plan.count + 1)
        ]
        with self.plan.budget.watching():
            for thread in threads:
                thread.start()
            try:
                for thread in threads:
                    thread.join()
            except BaseException:  # Ctrl-C in `mini-fix run`: every attempt stops and removes its container
                self.plan.budget.halt("interrupted")
                for thread in threads:
                    thread.join(STOP_WAIT)
                raise
        return [results[index] for index in sorted(results)]

    def _settle(self, settled: AttemptPlan) -> None:
        """Run by `settled` from now on: it may change what the clone tells (setup, sandbox, tests), never what the
        started containers and turns were counted by."""
        started = self.plan
        same = ("count", "run_id", "factory", "budget", "slots", "parallel")
        if any(getattr(settled, name) != getattr(started, name) for name in same):
            raise ValueError("a settled plan must keep the started plan's attempts, run id, sandboxes and budget")
        self.plan = settled

    def discard(self) -> None:
        """Remove the containers started early that no attempt took (the clone failed, the job was stopped)."""
        with self._lock:
            early, self._early = self._early, {}
        for index, sandbox in early.items():
            try:
                sandbox.discard()
            finally:
                self._give(index)

    def _run_one(
        self, index: int, *, task: str, checkout: Path, scratch: Path, secrets: list[str], into: dict[int, Attempt]
    ) -> None:
        temperature = temperature_for(self.plan.agent, index, self.plan.count)
        attempt = Attempt(Candidate(index=index, run_id=self.run_id(index), temperature=temperature))
        began = time.monotonic()
        try:
            self._wait(index)
            began = time.monotonic()
            sandbox = self._sandbox(index, checkout)
            export = scratch / ("export" if self.plan.count == 1 else f"export-{index}")
            self._agent(attempt, sandbox, task, checkout, export, secrets)
        except RunFailed as exc:
            attempt.failure = self._stopped(exc)
        except Exception as exc:  # a bug in one attempt ends that attempt, never the others or the job
            log.exception("attempt_crashed", attempt=index)
            attempt.failure = RunFailed(Outcome.AGENT_CRASHED, f"{type(exc).__name__}: {exc}")
        finally:
            self._give(index)
            attempt.seconds = time.monotonic() - began
        candidate = attempt.candidate
        if attempt.failure is not None:
            error = attempt.failure.detail or str(attempt.failure.outcome)
            candidate.error = "" if error == candidate.exit_status else error  # `LimitsExceeded` says it already
        candidate.exit_status = candidate.exit_status or str(attempt.outcome or "")
        with self._lock:
            into[index] = attempt
        self.plan.on_end(index, candidate.error or candidate.exit_status)

    def _wait(self, index: int) -> None:
        """Wait for this attempt's turn and a slot (those started early hold both already)."""
        stop = self.plan.budget.stop
        with self._lock:
            turned, holding = index in self._turned, index in self._holding
        if not turned and not self._turns.take(index, stop):
            raise RunFailed(Outcome.CANCELLED, "stopped before it started")
        with self._lock:
            self._turned.add(index)
        if not holding and not self.plan.slots.take(stop):
            raise RunFailed(Outcome.CANCELLED, "stopped before it started")
        with self._lock:
            self._holding.add(index)

    def _sandbox(self, index: int, checkout: Path) -> Sandbox:
        """This attempt's started sandbox with the checkout copied in: the early one, or one started now."""
        with self._lock:
            early = self._early.pop(index, None)
        if early is not None and early.config != self.plan.sandbox_config:  # a setup inferred after the clone
            early.discard()  # needs the proxy's network this one was started without
            early = None
        if early is None:
            early = EarlySandbox(self.plan.factory, self.plan.sandbox_config, self.run_id(index))
        return early.take(checkout)  # a failed copy-in removes the container itself

    def _agent(
        self, attempt: Attempt, sandbox: Sandbox, task: str, checkout: Path, export: Path, secrets: list[str]
    ) -> None:
        """Setup, the agent, the change taken out; the container is removed whatever happens."""
        plan, candidate = self.plan, attempt.candidate
        writer = self._writer(candidate, secrets)
        attempt.trajectory = writer.path
        model: execute.TimedModel | None = None
        removed = False

        def release() -> None:  # once its tree is out, the container goes (in the background) while git diffs
            nonlocal removed
            if not removed:
                removed = True
                self._remove(candidate.index, sandbox)

        try:
            made = plan.make_model(model_for(plan.model, candidate.temperature))
            model = execute.TimedModel(made, partial(plan.budget.count_seconds, candidate.index))
            with execute.closed_on_cancel(sandbox, plan.budget.stop):
                excludes = execute.run_setup(
                    sandbox,
                    plan.config.setup,
                    networked=plan.networked,
                    checkout=checkout,
                    tolerant=plan.setup_tolerant,
                )
            keeps = plan.config.keep_partial_work  # then a spent budget leaves the container to take work from
            with execute.closed_on_cancel(sandbox, plan.budget.closing if keeps else plan.budget.stop):
                attempt.result = execute.run_agent(
                    model,
                    sandbox,
                    plan.agent,
                    task,
                    trajectory=writer,
                    on_step=partial(self._on_step, candidate.index),
                    cancel=plan.budget.stop,
                    checkout=checkout,
                    testing=plan.testing,
                )
                _counted(candidate, attempt.result)
                take = partial(execute.take_change, sandbox, checkout, export, max_bytes=plan.max_export_bytes,
                               exclude=excludes, caps=plan.caps)  # fmt: skip
                budget_end = self._budget_end(attempt.result)
                if keeps and (exits.limit_ended(attempt.result.exit_status) or budget_end):
                    candidate.partial, candidate.budget_end = _partial(take), budget_end
                execute.require_submission(attempt.result)
                candidate.change = take(exported=release)
        finally:
            attempt.model_seconds = model.seconds if model is not None else 0.0
            release()

    def _remove(self, index: int, sandbox: Sandbox) -> None:
        """Remove the attempt's container, in the background when the plan has `removals`; the slot it holds goes
        back once the container is gone."""
        with self._lock:
            held = index in self._holding
            self._holding.discard(index)
        remove(sandbox, self.plan.slots if held else None, self.plan.removals)

    def _writer(self, candidate: Candidate, secrets: list[str]) -> TrajectoryWriter:
        plan = self.plan
        meta = {**plan.meta, "run_id": candidate.run_id}
        if plan.count > 1:
            meta |= {"attempt": candidate.index, "attempts": plan.count, "temperature": candidate.temperature}
        return TrajectoryWriter(
            plan.trajectory_path(candidate.run_id),
            secrets=secrets,
            mini_fix=meta,
            mirror=partial(plan.mirror, candidate.run_id) if plan.mirror else None,
        )

    def _on_step(self, index: int, event: StepEvent) -> None:
        self.plan.budget.count(index, event.prompt_tokens + event.completion_tokens)
        self.plan.on_step(index, event)

    def _budget_end(self, result: AgentResult) -> str:
        """Why the job's token budget (or the quota that set it) or its wall time stopped this agent, from the host's
        own count and clock; '' when it ended otherwise (a stop of the job, or the wall time's grace over, closes
        the container: no work is kept)."""
        budget = self.plan.budget
        if result.exit_status != exits.CANCELLED or budget.cancel.is_set() or budget.closing.is_set():
            return ""
        return budget.spent

    def _stopped(self, exc: RunFailed) -> RunFailed:
        """An attempt stopped by the job's total budget ran out of budget (or of the quota that set it); one stopped by
        the job was cancelled."""
        budget = self.plan.budget
        if exc.outcome == Outcome.CANCELLED and budget.spent and not budget.cancel.is_set():
            return RunFailed(Outcome.QUOTA if budget.quota_spent else Outcome.LIMITS, budget.spent)
        return exc

    def _give(self, index: int) -> None:
        with self._lock:
            held, turned = index in self._holding, index in self._turned
            self._holding.discard(index)
            self._turned.discard(index)
        if held:
            self.plan.slots.give()
        if turned:
            self._turns.give()


def _counted(candidate: Candidate, result: AgentResult) -> None:
    candidate.exit_status = result.exit_status
    candidate.steps = result.steps
    candidate.tokens = result.prompt_tokens + result.completion_tokens
    candidate.seconds = result.elapsed_seconds


@contextmanager
def started(plan: AttemptPlan) -> Iterator[Attempts]:
    """The job's attempts, containers starting now; whatever ends the block, those never used are removed."""
    attempts = Attempts(plan)
    try:
        yield attempts
    finally:
        attempts.discard()


def _partial(take: Callable[[], Change]) -> Change | None:
    """The change a limit-ended attempt left, or None when it cannot be taken out (the run then ends as before)."""
    try:
        return take()
    except RunFailed:
        log.warning("partial_change_lost", exc_info=True)
        return None
