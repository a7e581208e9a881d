"""The App's own storage failing (a full disk, an I/O error) never costs the maintainer the agent's change."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from bot import metrics, trajectory
from bot.jobs import JobStatus
from bot.pipeline.judge import verdicts
from bot.trajectory import RunStats, TrajectoryWriter
from tests.support.fake_github import FakeGitHub, widgets_github
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, bash


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    yield from widgets_github()


def failures() -> float:
    return metrics.TRAJECTORY_WRITE_FAILURES._value.get()


@pytest.mark.parametrize(
    ("code", "written"),
    [(errno.ENOSPC, 0), (errno.EIO, 0), (errno.ENOSPC, 1)],
    ids=["ENOSPC", "EIO", "ENOSPC-after-the-first-step"],
)
def test_a_trajectory_the_disk_refuses_still_ends_in_a_pr_with_its_transcript(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, written: int
) -> None:
    real, calls = trajectory.write_atomic, []

    def full(path: Path, text: str) -> None:  # the disk fills up after `written` writes
        calls.append(path)
        if len(calls) > written:
            raise OSError(code, "injected", str(path))
        real(path, text)

    monkeypatch.setattr(trajectory, "write_atomic", full)
    monkeypatch.setattr(verdicts, "write_atomic", full)  # the verdicts written after the run, too
    before = failures()
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    with structlog.testing.capture_logs() as logs:
        outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = github.pulls
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "return a + b" in github.show(REPO, head, "calc.py")
    assert "mini-fix trajectory" in github.comments_on(REPO, pr["number"])[0]["body"]
    assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in github.comments_on(REPO, pr["number"])[0]["body"]
    assert failures() - before >= 2 - written  # each refused save was counted
    assert [e["event"] for e in logs].count("trajectory_not_written") == 1  # one line, not one per step
    saved = world.settings.data_dir / "runs" / outcome.run_id / "trajectory.json"
    assert saved.exists() == (written > 0)  # the first step's file, when the disk took it


def test_saving_again_after_the_disk_recovers_writes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real, calls = trajectory.write_atomic, []

    def flaky(path: Path, text: str) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)

    monkeypatch.setattr(trajectory, "write_atomic", flaky)
    writer = TrajectoryWriter(tmp_path / "t.json")
    writer.save([{"role": "user", "content": "a"}], config={}, stats=RunStats())
    assert writer.write_failed and not writer.path.exists()
    writer.save([{"role": "user", "content": "a"}], config={}, stats=RunStats())
    assert not writer.write_failed and writer.path.exists()
