"""Fair share end to end: the real App with 2 slots, a fake GitHub, a scripted model and the real sandbox.

Organisation A labels 40 issues, organisation B labels 2 a few seconds later: B's first run starts before A's fifth
(first in, first out started it 41st of 42).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_github_flow import FILES, FIX, SECRET, app_env, jobs, wait_for
from tests.support.app_process import AppProcess
from tests.support.fake_github import FakeGitHub
from tests.support.model_server import ScriptedModelServer
from tests.support.webhooks import deliver, labeled

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
A, B = "orga/calc", "orgb/calc"
A_ISSUES, B_ISSUES = 40, 2


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    for repo in (A, B):
        fake.add_repo(*repo.split("/"), FILES)
    fake.set_permission("alice", "write")
    yield fake
    fake.stop()


def starts(app: AppProcess) -> list[dict[str, Any]]:
    """The App's `job started` log events, in order."""
    decoder, found = json.JSONDecoder(), []
    for line in app.log().splitlines():
        if line.startswith("{") and (event := decoder.raw_decode(line)[0]).get("event") == "job started":
            found.append(event)
    return found


def test_a_second_organisation_starts_before_the_bursts_fifth_run(github: FakeGitHub, tmp_path: Path) -> None:
    a_issues = [github.add_issue(A, f"add() subtracts #{n}", author="alice") for n in range(A_ISSUES)]
    b_issues = [github.add_issue(B, f"add() subtracts #{n}", author="alice") for n in range(B_ISSUES)]
    with ScriptedModelServer(FIX, by_turn=True, delay=1.0) as model:  # every run the same script, 1 s a reply
        env = app_env(github, model, tmp_path / "data", MINIFIX_WORKERS="2")
        app = AppProcess(env, tmp_path / "app.log").start()
        try:
            for issue in a_issues:
                assert (
                    deliver(f"{app.url}/webhook", "issues", labeled(A, issue, sender="alice"), SECRET).status_code
                    == 202
                )
            labelled_b = time.time() + 3
            time.sleep(3)
            for issue in b_issues:
                payload = labeled(B, issue, sender="alice", installation=2)
                assert deliver(f"{app.url}/webhook", "issues", payload, SECRET).status_code == 202

            def decided() -> bool:
                insts = [e["installation"] for e in starts(app)]
                return insts.count(2) >= 1 or insts.count(1) >= 5

            wait_for(decided, 600, "B's first run or A's fifth", app.log)
        finally:
            app.stop()
    order = starts(app)
    insts = [e["installation"] for e in order]
    b_first = insts.index(2) if 2 in insts else len(insts)
    a_fifth = [n for n, inst in enumerate(insts) if inst == 1][4] if insts.count(1) >= 5 else len(insts)
    waited = (
        datetime.fromisoformat(order[b_first]["timestamp"]).timestamp() - labelled_b if b_first < len(order) else -1
    )
    print(f"start order {insts}; B's first is start #{b_first + 1}, {waited:.1f} s after B labelled")
    assert b_first < a_fifth, insts


def test_a_monthly_token_quota_stops_one_organisation_and_lets_the_other_run(
    github: FakeGitHub, tmp_path: Path
) -> None:
    a_issues = [github.add_issue(A, f"add() subtracts #{n}", author="alice") for n in range(2)]
    b_issue = github.add_issue(B, "add() subtracts", author="alice")
    data = tmp_path / "data"
    with ScriptedModelServer(FIX, by_turn=True) as model:
        quota = json.dumps({"orga": {"tokens_per_month": 1}})  # A's first run crosses it
        env = app_env(github, model, data, MINIFIX_QUOTA_OVERRIDES=quota)
        app = AppProcess(env, tmp_path / "app.log").start()
        try:
            for issue in a_issues:
                assert (
                    deliver(f"{app.url}/webhook", "issues", labeled(A, issue, sender="alice"), SECRET).status_code
                    == 202
                )
            payload = labeled(B, b_issue, sender="alice", installation=2)
            assert deliver(f"{app.url}/webhook", "issues", payload, SECRET).status_code == 202
            done = wait_for(
                lambda: (
                    len(rows := [j for j in jobs(data, env) if j["status"] not in ("queued", "running")]) == 3 and rows
                ),
                300,
                "three jobs ended",
                app.log,
            )
        finally:
            app.stop()
    ended = {(j["repo"], j["issue"]): j for j in done}
    refused = [key for key, j in ended.items() if (j["outcome"] or "").startswith("quota_exceeded")]
    assert len(refused) == 1 and refused[0][0] == A, ended
    assert ended[(B, b_issue)]["status"] == "succeeded"
    [comment] = [c["body"] for c in github.comments_on(A, refused[0][1]) if "quota" in c["body"]]
    assert "1 tokens per month" in comment and "used" in comment and "resets at" in comment
    [started] = [key for key in ended if key[0] == A and key not in refused]
    # A's first run started with the quota's headroom (1 token) as its budget: it stopped as at a budget's end,
    # and ends with its own outcome, `quota`, saying which quota stopped it
    assert ended[started]["status"] == "failed"
    assert ended[started]["outcome"].startswith("quota: this organisation's quota of 1 tokens per month was reached")
    assert [pr["repo"] for pr in github.pulls] == [B]


def test_with_wait_a_run_past_the_quota_stays_queued_with_one_comment_and_the_other_organisation_runs(
    github: FakeGitHub, tmp_path: Path
) -> None:
    a_issues = [github.add_issue(A, f"add() subtracts #{n}", author="alice") for n in range(2)]
    b_issue = github.add_issue(B, "add() subtracts", author="alice")
    data = tmp_path / "data"
    with ScriptedModelServer(FIX, by_turn=True) as model:
        quota = json.dumps({"orga": {"tokens_per_month": 1}})  # A's first run crosses it
        env = app_env(github, model, data, MINIFIX_QUOTA_OVERRIDES=quota, MINIFIX_QUOTA_WHEN_REACHED="wait")
        app = AppProcess(env, tmp_path / "app.log").start()
        try:
            for issue in a_issues:
                assert (
                    deliver(f"{app.url}/webhook", "issues", labeled(A, issue, sender="alice"), SECRET).status_code
                    == 202
                )
            payload = labeled(B, b_issue, sender="alice", installation=2)
            assert deliver(f"{app.url}/webhook", "issues", payload, SECRET).status_code == 202

            def settled() -> list[dict[str, Any]] | None:
                rows = jobs(data, env)
                ended = [j for j in rows if j["status"] not in ("queued", "running")]
                waiting = [j for j in rows if j["status"] == "queued" and (j["outcome"] or "").startswith("quota_wait")]
                return rows if len(ended) == 2 and len(waiting) == 1 else None

            rows = wait_for(settled, 300, "two jobs ended and one waits", app.log)
        finally:
            app.stop()
    by_key = {(j["repo"], j["issue"]): j for j in rows}
    assert by_key[(B, b_issue)]["status"] == "succeeded"
    [waiting] = [key for key, j in by_key.items() if j["status"] == "queued"]
    assert waiting[0] == A
    [comment] = [c["body"] for c in github.comments_on(A, waiting[1]) if "quota" in c["body"]]
    assert "will start on this at" in comment and "1 tokens per month" in comment and "used" in comment
