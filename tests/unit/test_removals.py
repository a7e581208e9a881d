"""Containers removed in the background (`capacity.Removals`): the job goes on while the engine removes what it no
longer uses, a slot comes back only once its container is gone, and no container outlives the job."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.jobs import JobStatus
from bot.pipeline.capacity import Removals, SandboxSlots
from bot.pipeline.deps import PipelineDeps
from sandbox.base import Sandbox, SandboxConfig
from tests.support.fake_github import FakeGitHub
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, SUBMIT, World, github

__all__ = ["github"]
TESTED = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
}


class SlowClose:
    def __init__(self) -> None:
        self.may_go = threading.Event()
        self.closed = False

    def close(self) -> None:
        self.may_go.wait(10)
        self.closed = True


def test_a_background_removal_gives_its_slot_back_only_once_the_sandbox_is_gone() -> None:
    slots, removals, box = SandboxSlots(1), Removals(), SlowClose()
    assert slots.try_take()
    removals.remove(box, slots)  # returns at once
    assert not box.closed and not slots.try_take()  # still being removed: its slot is still taken
    box.may_go.set()
    removals.wait()
    assert box.closed and slots.try_take()


class Watched(World):
    """World whose first sandbox (the attempt's) is slow to remove: its removal waits for the next sandbox to start
    (the verification's), at most `patience` seconds."""

    def __init__(self, github: FakeGitHub, tmp_path: Path, patience: float, slots: SandboxSlots) -> None:
        super().__init__(github, tmp_path, [FIX, bash(SUBMIT)])
        self.patience, self.slots = patience, slots
        self.events: list[str] = []
        self.second = threading.Event()

    def sandbox(self, config: SandboxConfig, run_id: str) -> Sandbox:
        box: Any = super().sandbox(config, run_id)
        n = len(self.sandboxes)
        self.events.append(f"started {n}")
        if n == 1:
            close = box.close

            def slow_close() -> None:
                self.second.wait(self.patience)
                close()
                self.events.append("removed 1")

            box.close = slow_close
        else:
            self.second.set()
        return box  # type: ignore[no-any-return]

    def deps(self) -> PipelineDeps:
        return replace(super().deps(), sandbox_slots=self.slots)


def _run(world: Watched, github: FakeGitHub) -> None:
    github.add_repo("acme", "tested", TESTED)  # an inferred test command: verification starts a sandbox
    world.issue = github.add_issue("acme/tested", "add() subtracts", "", author="alice")
    outcome = world.run(repo="acme/tested")
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert len(world.sandboxes) == 2 and all(box.closed for box in world.sandboxes)  # none outlives the job


def test_the_verification_starts_while_the_attempts_container_is_being_removed(
    github: FakeGitHub, tmp_path: Path
) -> None:
    world = Watched(github, tmp_path, patience=10, slots=SandboxSlots(0))  # no bound on sandboxes
    _run(world, github)
    assert world.events == ["started 1", "started 2", "removed 1"]  # the job did not wait for the removal


def test_a_removal_in_the_background_still_holds_its_slot_until_the_container_is_gone(
    github: FakeGitHub, tmp_path: Path
) -> None:
    world = Watched(github, tmp_path, patience=0.5, slots=SandboxSlots(1))  # one sandbox at a time
    _run(world, github)
    assert world.events == ["started 1", "removed 1", "started 2"]
