"""Pacing as GitHub asks, without idle waits (issue 33 item 6): one installation's writes one at a time, a second
only between content-creating writes, and writes nobody waits for sent in order off the job's thread. A fake clock
that moves only when the pacer sleeps; never a wall-clock assertion."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from bot.github.app import GitHubApp
from bot.github.pacing import Pacers, WritePacer, creates_content
from bot.jobs import JobStatus
from bot.pipeline.deps import PipelineDeps
from tests.support.fake_github import FakeGitHub
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, bash, github

__all__ = ["github"]


class FakeTime:
    """A clock that only moves when someone sleeps (or the test says so); who slept is recorded."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append((threading.current_thread().name, seconds))
            self.now += seconds

    def slept(self) -> list[float]:
        return [s for _, s in self.sleeps]


def paced(t: FakeTime) -> WritePacer:
    return WritePacer(1.0, clock=t.clock, sleep=t.sleep)


def test_only_posts_create_content() -> None:
    assert creates_content("POST") and creates_content("post")
    assert not any(creates_content(m) for m in ("PATCH", "PUT", "DELETE", "GET"))


def test_no_wait_before_the_first_write_nor_when_the_last_content_write_was_a_second_ago() -> None:
    t = FakeTime()
    pacer = paced(t)
    with pacer.turn(creates=True):
        t.now += 0.2
    t.now += 1.0  # the job worked a second meanwhile
    with pacer.turn(creates=True):
        pass
    assert t.sleeps == []


def test_a_write_that_creates_nothing_neither_waits_nor_restarts_the_second() -> None:
    t = FakeTime()
    pacer = paced(t)
    with pacer.turn(creates=True):  # a comment posted
        pass
    with pacer.turn(creates=False):  # the status comment edited right after: no second needed
        t.now += 0.3
    assert t.sleeps == []
    with pacer.turn(creates=True):  # the next content write: a second after the comment, not after the edit
        pass
    assert t.slept() == [pytest.approx(0.7)]


def test_a_content_write_waiting_out_its_second_does_not_hold_the_turn() -> None:
    t = FakeTime()
    waiting, release, edited = threading.Event(), threading.Event(), threading.Event()

    def slow_sleep(seconds: float) -> None:
        waiting.set()
        release.wait(10)
        t.sleep(seconds)

    pacer = WritePacer(1.0, clock=t.clock, sleep=slow_sleep)
    with pacer.turn(creates=True):
        pass

    def second_post() -> None:
        with pacer.turn(creates=True):
            pass

    def edit() -> None:
        with pacer.turn(creates=False):
            edited.set()

    poster = threading.Thread(target=second_post)
    poster.start()
    assert waiting.wait(10)  # the second comment waits out its second ...
    editor = threading.Thread(target=edit)
    editor.start()
    assert edited.wait(10)  # ... and an edit goes meanwhile
    release.set()
    poster.join(10)
    editor.join(10)
    assert t.slept() == [1.0]


def test_writes_nobody_waits_for_go_at_once_when_they_can_else_in_order_off_the_callers_thread() -> None:
    t = FakeTime()
    pacer = paced(t)
    sent: list[str] = []
    pacer.later(lambda: sent.append("eyes"))  # nothing before it: sent at once, here
    assert sent == ["eyes"]
    pacer.later(lambda: sent.append("trajectory"))  # needs its second: queued, the caller goes on
    pacer.later(lambda: sent.append("edit"), creates=False)  # behind it, in order
    pacer.later(lambda: sent.append("rocket"))
    assert pacer.drain(10)
    assert sent == ["eyes", "trajectory", "edit", "rocket"]
    assert [who for who, _ in t.sleeps] == ["github-writes", "github-writes"]  # never the caller's thread
    assert t.slept() == [1.0, 1.0]


def test_a_failed_write_nobody_waits_for_is_logged_and_the_queue_goes_on() -> None:
    t = FakeTime()
    pacer = paced(t)
    sent: list[str] = []

    def boom() -> None:
        raise RuntimeError("GitHub said no")

    pacer.later(lambda: sent.append("first"))
    pacer.later(boom)
    pacer.later(lambda: sent.append("third"))
    assert pacer.drain(10) and sent == ["first", "third"]


def test_pacers_drain_every_installations_queue() -> None:
    t = FakeTime()
    pacers = Pacers(lambda: paced(t))
    sent: list[int] = []
    for installation in (1, 2):
        for n in range(3):
            pacers.of(installation).later(lambda n=n, i=installation: sent.append(i * 10 + n))  # type: ignore[misc]
    assert pacers.drain(10) and sorted(sent) == [10, 11, 12, 20, 21, 22]


class PacedWorld(World):
    """The pipeline's world with the real one-second pacing on a fake clock."""

    def __init__(self, github: FakeGitHub, tmp_path: Path, replies: list[Any]) -> None:
        super().__init__(github, tmp_path, replies)
        self.time = FakeTime()
        self.pacers = Pacers(lambda: paced(self.time))

    def deps(self) -> PipelineDeps:
        from dataclasses import replace

        model, time = self.model, self.time

        class Thinking:
            """The scripted model, taking five (fake) seconds per reply as a real one takes time."""

            def __getattr__(self, name: str) -> Any:
                return getattr(model, name)

            def query(self, messages: list[dict[str, Any]]) -> Any:
                time.now += 5.0
                return model.query(messages)

        paced_github = GitHubApp(self.settings, pacers=self.pacers).for_repo
        return replace(super().deps(), github=paced_github, model=lambda _: Thinking())


def test_a_jobs_thread_never_idles_for_pacing(github: FakeGitHub, tmp_path: Path) -> None:
    world = PacedWorld(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert world.pacers.drain(30)
    job_thread = threading.current_thread().name
    assert world.time.sleeps and all(who != job_thread for who, _ in world.time.sleeps)  # waited, not by the job
    assert all(s <= 1.0 for s in world.time.slept())
    [pr] = github.pulls
    assert "mini-fix trajectory" in github.comments_on(REPO, pr["number"])[0]["body"]
    assert world.reactions() == ["eyes", "rocket"]
