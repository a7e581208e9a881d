"""Work kept when the job's wall time (MINIFIX_MAX_WALL_TIME) runs out mid-run: as at its token budget's end, the
agents stop at their next step and their trees are taken out for a `[WIP]` draft naming the wall time; an attempt
that does not end within the grace (stuck in a long command) has its container closed, so the job still ends."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

from bot.jobs import CancelSignal, JobStatus
from bot.pipeline.capacity import JobBudget
from bot.pipeline.deps import PipelineDeps
from sandbox.base import ExecResult, Sandbox, SandboxConfig
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit.test_attempts import Attempts, CountedSandbox
from tests.unit.test_pipeline import FIX, REPO, World, github
from tests.unit.test_wip_budget import CONFIG, _assert_wip_draft

__all__ = ["github"]
WORKING = [FIX, *[bash(f"sleep 0.2; echo {i}") for i in range(40)]]  # fixes at once, keeps working, never submits
WALL = "the job's wall time over all attempts (600 s, MINIFIX_MAX_WALL_TIME) ran out"
STUCK = "sleep 600"
LATE = 1_000_000.0  # far past the wall time and its grace


class Clock:
    """The job's clock: 0 until `ran_out()` says the wall time is over, then `LATE`; `LATE` twice over once
    `grace_over()` says so (None: never, the clock stays)."""

    def __init__(self, ran_out: Callable[[], bool], grace_over: Callable[[], bool] | None = None) -> None:
        self.ran_out, self.grace_over = ran_out, grace_over

    def __call__(self) -> float:
        if not self.ran_out():
            return 0.0
        return 2 * LATE if self.grace_over is not None and self.grace_over() else LATE


def _clocked(deps: PipelineDeps, clock: Clock) -> PipelineDeps:
    return dataclasses.replace(deps, clock=clock)


class WallWorld(World):
    """One attempt whose job's clock runs out after the model's third reply."""

    def __init__(self, github: FakeGitHub, tmp_path: Path) -> None:
        super().__init__(github, tmp_path, list(WORKING))
        self.settings = self.settings.model_copy(update={"max_wall_time": 600})

    def deps(self) -> PipelineDeps:
        return _clocked(super().deps(), Clock(lambda: len(self.model.requests) >= 3))


def test_a_run_out_job_wall_time_keeps_the_change_as_a_wip_draft(github: FakeGitHub, tmp_path: Path) -> None:
    world = WallWorld(github, tmp_path)
    outcome = world.run()
    _assert_wip_draft(github, world, outcome, WALL)
    assert world.sandboxes[0].closed  # removed once its work was taken out


def test_without_keep_partial_work_a_run_out_wall_time_opens_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "keep_partial_work: false\n"})
    world = WallWorld(github, tmp_path)
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and outcome.error and outcome.error.startswith("limits")
    assert WALL in outcome.error and github.pulls == []
    assert github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None
    assert world.sandboxes[0].closed


class KeptSandbox(CountedSandbox):
    """A counted sandbox that records what each action returned, and lets a stuck action run a long time."""

    def __init__(self, world: Attempts) -> None:
        super().__init__(world, counted=True)
        self.timeout = 60.0  # far past the grace: only a close ends the stuck command at once
        self.returned: list[tuple[str, ExecResult]] = []

    def execute(self, command: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        result = super().execute(command, timeout=timeout, cwd=cwd)
        self.returned.append((command, result))
        return result


class StuckWorld(Attempts):
    """Two attempts: the first fixes and keeps working, the second is stuck in `sleep 600` when the wall time runs
    out; the grace is over once the first one's container is gone (its work taken out)."""

    def __init__(self, github: FakeGitHub, tmp_path: Path) -> None:
        stuck = [bash(STUCK), *[bash(f"echo {i}") for i in range(5)]]
        super().__init__(github, tmp_path, {0.0: list(WORKING), 0.7: stuck}, max_wall_time=600)
        self.boxes: list[KeptSandbox] = []

    def sandbox(self, config: SandboxConfig, run_id: str) -> Sandbox:
        if "-verify-" in run_id:
            return super().sandbox(config, run_id)
        box = KeptSandbox(self)
        with self._lock:
            self.sandboxes.append(box)
            self.boxes.append(box)
            self.open_now += 1
        return box

    def ran(self, command: str) -> list[KeptSandbox]:
        return [box for box in list(self.boxes) if command in box.commands]

    def ran_out(self) -> bool:
        with self._lock:
            working = any(t == 0.0 and len(model.requests) >= 3 for t, model in self.models)
        return working and bool(self.ran(STUCK))

    def grace_over(self) -> bool:
        return all(box.closed for box in self.ran(FIX_COMMAND))

    def deps(self) -> PipelineDeps:
        return _clocked(super().deps(), Clock(self.ran_out, self.grace_over))


FIX_COMMAND = FIX.split("```mswea_bash_command\n")[1].split("\n```")[0]


def test_an_attempt_stuck_at_the_wall_times_end_is_closed_after_the_grace_and_the_others_work_kept(
    github: FakeGitHub, tmp_path: Path
) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 2\n"})
    world = StuckWorld(github, tmp_path)
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = github.pulls
    assert pr["draft"] and pr["title"].startswith("[WIP] ") and WALL in pr["body"]
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "a + b" in github.show(REPO, head, "calc.py")  # the working attempt's change
    [stuck] = world.ran(STUCK)
    [(_, result)] = [(c, r) for c, r in stuck.returned if c == STUCK]
    assert stuck.closed and result.returncode == -9  # killed by the container's close, not by its own end
    assert all(box.closed for box in world.sandboxes)


def _poll_until(event: threading.Event, *, polls: int = 20) -> bool:
    return event.wait(polls * 0.5 + 1)


def test_the_wall_time_stops_the_attempts_and_closes_their_containers_only_after_the_grace() -> None:
    now = [0.0]
    budget = JobBudget(tokens=0, seconds=600, cancel=threading.Event(), clock=lambda: now[0], grace=150)
    with budget.watching():
        now[0] = 600.0
        assert _poll_until(budget.stop)
        assert budget.spent == WALL and not budget.closing.is_set()  # containers left: work can be taken out
        now[0] = 749.0
        assert not budget.closing.wait(1.2)  # still within the grace
        now[0] = 750.0
        assert _poll_until(budget.closing)  # past it: whatever still runs is closed
    assert budget.closing.reason == WALL


def test_a_stop_of_the_job_during_the_wall_times_grace_closes_the_containers_at_once() -> None:
    now = [0.0]
    cancel = CancelSignal()
    budget = JobBudget(tokens=0, seconds=600, cancel=cancel, clock=lambda: now[0], grace=150)
    with budget.watching():
        now[0] = 600.0
        assert _poll_until(budget.stop) and not budget.closing.is_set()
        cancel.cancel("/agent stop by @alice")
        assert _poll_until(budget.closing)
    assert budget.closing.reason == "/agent stop by @alice" and budget.spent == WALL
