"""Accounting end to end: a worker killed mid-run, the run resumed by another; `mini-fix usage` counts every model
reply a worker received exactly once (the real App, a fake GitHub, a scripted model, the real sandbox)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_github_flow import FIX, REPO, SECRET, app_env, github, jobs, wait_for  # noqa: F401
from tests.support.app_process import AppProcess
from tests.support.fake_github import FakeGitHub
from tests.support.model_server import ScriptedModelServer
from tests.support.webhooks import deliver, labeled

pytestmark = [pytest.mark.docker, pytest.mark.e2e]


class CountingModelServer(ScriptedModelServer):
    """The scripted model, keeping the usage it answered each request with, by the request's arrival order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.served: dict[int, dict[str, int]] = {}

    def next_reply(self, body: dict[str, Any], peer: str = "") -> tuple[int, dict[str, Any], dict[str, str]]:
        n = len(self.requests)  # this test's requests come one at a time
        status, payload, headers = super().next_reply(body, peer)
        if status == 200:
            self.served[n] = payload["usage"]
        return status, payload, headers


def usage(env: dict[str, str]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "bot.cli", "usage", "--by", "repo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_a_killed_and_resumed_run_counts_each_reply_once(github: FakeGitHub, tmp_path: Path) -> None:  # noqa: F811
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    held, release = threading.Event(), threading.Event()

    def second_step(_messages: list[dict[str, Any]]) -> str:
        if not held.is_set():  # the first worker's second call: held until that worker is killed
            held.set()
            release.wait(120)
        return FIX[1]  # type: ignore[return-value]

    data = tmp_path / "data"
    with CountingModelServer([FIX[0], second_step, FIX[2]], by_turn=True) as model:
        env = app_env(github, model, data, MINIFIX_LEASE_SECONDS="4")
        first = AppProcess(env, tmp_path / "first.log").start()
        try:
            deliver(f"{first.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            wait_for(held.is_set, 120, "the first worker's second model call", first.log)
            first.kill()  # SIGKILL mid-run: one reply received and metered, the second never delivered
            unanswered = len(model.requests) - 1
        finally:
            release.set()
            first.kill()
        second = AppProcess(env, tmp_path / "second.log").start()
        try:
            wait_for(lambda: [j for j in jobs(data, env) if j["status"] == "succeeded"], 240, "done", second.log)
        finally:
            second.stop()
    [row] = usage(env)
    received = {n: u for n, u in model.served.items() if n != unanswered}
    assert len(model.requests) == 2 + 3 and len(received) == 1 + 3  # the killed worker got 1 of its 2 replies
    assert (row["repo"], row["jobs"], row["calls"]) == (REPO, 1, len(received))
    assert row["prompt_tokens"] == sum(u["prompt_tokens"] for u in received.values())
    assert row["completion_tokens"] == sum(u["completion_tokens"] for u in received.values())
    assert row["wall_seconds"] > 0 and row["sandbox_cpu_seconds"] > 0
