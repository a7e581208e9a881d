"""The status comment: progress edits run beside the agent, and the outcome is always the comment's last edit."""

from __future__ import annotations

import threading

from bot.jobs import Outcome, RunInfo
from bot.pipeline.status import StatusComment
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
