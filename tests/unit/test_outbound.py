"""Every write the worker makes to GitHub passes the redacting gateway: run comments, PRs and the worker's notices."""

from __future__ import annotations

import inspect
from typing import Any

from bot.github.gateway import GitHubGateway
from bot.jobs import Job, JobKind
from bot.pipeline.publish.outbound import RedactingGateway, redacting
from bot.worker.notices import gave_up_notifier

SECRET = "ghs_0123456789abcdefghijklmnopqrstuvwxyzAB"


class Recorder:
    """The writes a gateway was asked for, as (method, text) pairs."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []

    def create_comment(self, number: int, body: str) -> int:
        self.writes.append(("create_comment", body))
        return 1

    def add_reaction(self, number: int, content: str, *, comment_id: int | None = None) -> None:
        self.writes.append(("add_reaction", content))


def test_every_gateway_write_with_text_is_redacted_by_the_gateway_itself() -> None:
    # A write method added to the seam without a redacting override would reach GitHub through __getattr__ as is.
    texts = {"body", "title", "text", "message"}
    writes = [
        name
        for name, fn in inspect.getmembers(GitHubGateway, inspect.isfunction)
        if texts & set(inspect.signature(fn).parameters)
    ]
    assert writes, "the seam has text writes"
    assert [name for name in writes if name not in vars(RedactingGateway)] == []


def test_the_workers_gave_up_notice_is_redacted() -> None:
    recorder = Recorder()
    factory: Any = lambda installation, repo: recorder  # noqa: E731
    notify = gave_up_notifier(redacting(factory, [SECRET]))
    job = Job("j1", JobKind.FIX, 7, "acme/widgets", 3, "alice", "d1", error=f"clone failed: token {SECRET} refused")
    notify(job)
    bodies = [text for method, text in recorder.writes if method == "create_comment"]
    assert len(bodies) == 1 and "clone failed" in bodies[0]
    assert SECRET not in bodies[0]
