"""The status comment: progress edits run beside the agent, and the outcome is always the comment's last edit."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from bot.jobs import Outcome, RunInfo
from bot.pipeline.publish.events import Said, fold, note
from bot.pipeline.publish.status import StatusComment
from bot.render import outcome


class SlowComments:
    """The comment calls of a GitHub gateway; the first edit blocks until `release` is set."""

    def __init__(self) -> None:
        self.release, self.editing = threading.Event(), threading.Event()
        self.bodies: list[str] = []

    def create_comment(self, issue: int, body: str) -> int:
        self.bodies.append(body)
        return 7

    def update_comment(self, comment_id: int, body: str) -> None:
        self.editing.set()
        assert self.release.wait(20)
        self.bodies.append(body)

    def add_reaction(self, issue: int, reaction: str) -> None:
        self.bodies.append(f"reaction {reaction}")


RUN: RunInfo = {"run_id": "run-1", "model": "m", "requester": "alice", "retry": False, "exit_status": ""}


def test_a_slow_progress_edit_does_not_hold_the_run_and_lands_before_the_outcome() -> None:
    gh, now = SlowComments(), [0.0]
    status = StatusComment(gh, 3, RUN, lambda: now[0])  # type: ignore[arg-type]
    status.start()
    now[0] = 10.0
    status.progress(step=4, limit=30, command="ls", tokens=100, elapsed=10.0)  # returns while GitHub is busy
    assert gh.editing.wait(20) and len(gh.bodies) == 1
    now[0] = 20.0
    status.progress(step=5, limit=30, command="cat x", tokens=200, elapsed=20.0)  # one edit in flight: skipped
    finisher = threading.Thread(
        target=status.close, args=(outcome(Outcome.PR_OPENED), {"pr": None, "run": None}), kwargs={"comment": None}
    )
    finisher.start()
    gh.release.set()
    finisher.join(20)
    assert not finisher.is_alive()
    progress, final = gh.bodies[1], gh.bodies[2]
    assert "ls" in progress and "cat x" not in "".join(gh.bodies)
    assert final != progress and gh.bodies[-1].startswith("reaction") and len(gh.bodies) == 4


class CountingComments:
    """Comment calls that record each edit and fail the test if two edits ever overlap."""

    def __init__(self) -> None:
        self.bodies: list[str] = []
        self.editing = 0
        self.overlapped = False
        self.lock = threading.Lock()

    def create_comment(self, issue: int, body: str) -> int:
        self.bodies.append(body)
        return 7

    def update_comment(self, comment_id: int, body: str) -> None:
        with self.lock:
            self.editing += 1
            self.overlapped |= self.editing > 1
        threading.Event().wait(0.01)
        with self.lock:
            self.editing -= 1
            self.bodies.append(body)

    def add_reaction(self, issue: int, reaction: str) -> None:
        self.bodies.append(f"reaction {reaction}")


def test_attempts_report_from_their_own_threads_each_in_its_own_row() -> None:
    gh, ticks, lock = CountingComments(), [0.0], threading.Lock()

    def clock() -> float:
        with lock:
            ticks[0] += 1.0
            return ticks[0]

    status = StatusComment(gh, 3, RUN, clock, attempts=3)  # type: ignore[arg-type]
    status.start()

    def attempt(k: int) -> None:
        for step in range(1, 51):
            status.progress(attempt=k, step=step, limit=50, command=f"echo {k}-{step}", tokens=step * 10, elapsed=1.0)
        status.ended(k, "Submitted")

    threads = [threading.Thread(target=attempt, args=(k,)) for k in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    if status._in_flight is not None:  # an edit still on its way would make the next one skip
        status._in_flight.join(5)
    status.progress(attempt=1, step=50, limit=50, command="last", tokens=500, elapsed=2.0)  # after every attempt
    status.close(outcome(Outcome.PR_OPENED), {"pr": None, "run": None}, comment=None)
    assert not gh.overlapped and len(gh.bodies) > 3
    last_progress = [b for b in gh.bodies if "| attempt |" in b][-1]
    for k in (1, 2, 3):
        assert f"| {k} | 50 of 50 · <code>Submitted</code>" in last_progress or f"| {k} | 50 of 50 |" in last_progress
    assert "Tokens over all attempts: 1,500" in last_progress
    assert "opened a pull request" in gh.bodies[-2] and gh.bodies[-1] == "reaction rocket"


def test_the_starting_comment_names_the_model_and_its_profile() -> None:
    gh = CountingComments()
    StatusComment(gh, 3, {**RUN, "profile": "toolcall"}, lambda: 0.0).start()  # type: ignore[arg-type]
    assert "(model `m` (profile `toolcall`)" in gh.bodies[0]
    gh = CountingComments()
    StatusComment(gh, 3, RUN, lambda: 0.0).start()  # type: ignore[arg-type]
    assert "(model `m`)" in gh.bodies[0] and "profile" not in gh.bodies[0]


def test_what_the_run_learns_arrives_as_events_and_every_render_folds_them() -> None:
    gh = CountingComments()
    status = StatusComment(gh, 3, RUN, lambda: 0.0)  # type: ignore[arg-type]
    status.say(Said("tests", "`pytest` (configured)"), note("first"), Said("setup", "ran in 3 s"))
    status.say(note("second"), Said("setup", "restored from cache in 1 s"))  # the latest value wins
    status.start()
    body = gh.bodies[-1]
    assert "`pytest` (configured)" in body and "restored from cache in 1 s" in body and "ran in 3 s" not in body
    assert status.info()["notes"] == ["first", "second"] and status.events[0] == Said("tests", "`pytest` (configured)")
    assert RUN == {"run_id": "run-1", "model": "m", "requester": "alice", "retry": False, "exit_status": ""}
    assert "notes" not in fold(RUN, [Said("exit_status", "submitted")])  # no notes, no key: as the templates expect


def test_no_pipeline_module_writes_into_the_runs_dict() -> None:
    """The status comment's words come from events only: nothing in bot/pipeline assigns into a RunInfo."""
    root = Path(__file__).resolve().parents[2] / "bot" / "pipeline"
    written = re.compile(r"""\brun\[["'][a-z_]+["']\]\s*=|setdefault\(\s*["']notes["']""")
    offenders = [str(p) for p in root.rglob("*.py") if written.search(p.read_text())]
    assert offenders == []
