"""The App end to end with a real model: label → status comment with real steps → a draft PR or an outcome comment.

The same harness as tests/e2e/test_github_flow.py (`mini-fix serve` as a subprocess, the fake GitHub on
127.0.0.1, the real Docker sandbox), with the real 1.5B model instead of the scripted server.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.e2e.test_github_flow import SECRET, app_env, jobs, wait_for
from tests.realmodel.conftest import TIER_CONFIG, RealModel
from tests.support.app_process import AppProcess
from tests.support.buggy_repos import SHOUT
from tests.support.fake_github import FakeGitHub
from tests.support.webhooks import deliver, labeled

pytestmark = [pytest.mark.docker, pytest.mark.realmodel]

REPO = "acme/textkit"
STEP_ROW = re.compile(r"^\| (\d+) of (\d+) \| (.+) \| ([\d,]+) \|", re.MULTILINE)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "textkit", SHOUT.files)
    fake.set_permission("alice", "write")
    yield fake
    fake.stop()


def watch_status(github: FakeGitHub, issue: int, stop: threading.Event, seen: list[str]) -> None:
    """Record every distinct body the status comment (the App's first comment on the issue) goes through."""
    while not stop.wait(0.3):
        comments = github.comments_on(REPO, issue)
        if comments and (not seen or seen[-1] != comments[0]["body"]):
            seen.append(comments[0]["body"])


def test_labeled_issue_with_the_real_model(
    github: FakeGitHub, real_model: RealModel, tier_agent_config: Path, tmp_path: Path
) -> None:
    issue = github.add_issue(REPO, "shout() does not upper-case", SHOUT.issue, author="alice")
    data = tmp_path / "data"
    env = app_env(
        github,
        SimpleNamespace(api_base=real_model.api_base),
        data,  # type: ignore[arg-type]
        MINIFIX_MODEL=real_model.litellm_name,
        MINIFIX_AGENT_CONFIG=str(tier_agent_config),
    )
    seen: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(target=watch_status, args=(github, issue, stop, seen), daemon=True)
    app = AppProcess(env, tmp_path / "app.log").start()
    watcher.start()
    try:
        assert deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET).status_code == 202
        job = wait_for(
            lambda: [j for j in jobs(data, app.env) if j["status"] in ("succeeded", "failed")],
            900,
            "the job to finish",
            app.log,
        )[0]
    finally:
        stop.set()
        watcher.join(5)
        app.stop()
    log = app.log()
    # The status comment showed real progress: a step row with a real command and real token counts.
    rows = [m for body in seen for m in STEP_ROW.finditer(body)]
    assert rows, f"no progress row in {seen}\n{log[-3000:]}"
    limit = TIER_CONFIG["agent"]["step_limit"]
    assert all(int(r.group(2)) == limit and 1 <= int(r.group(1)) <= limit for r in rows)
    assert any(int(r.group(4).replace(",", "")) > 100 for r in rows)
    # It ended with something a maintainer sees: a draft PR, or a final status that names the outcome.
    final = github.comments_on(REPO, issue)[0]["body"]
    assert "is working" not in final and "is starting" not in final
    if job["status"] == "succeeded":
        pr = github.pulls[0]
        assert pr["draft"] is True and f"Fixes #{issue}" in pr["body"] and pr["html_url"] in final
    else:
        assert github.pulls == [] and "mini-fix:" in final, final
    # The trajectory holds the real replies and usage.
    trajectory = json.loads(next(data.rglob("trajectory.json")).read_text())
    calls = [m for m in trajectory["messages"] if m["role"] == "assistant"]
    assert trajectory["mini_fix"]["prompt_tokens"] > 100 * trajectory["mini_fix"]["steps"] > 0
    assert all(m["extra"]["usage"]["completion_tokens"] > 0 for m in calls)
