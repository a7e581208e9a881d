"""The App end to end: a signed `issues.labeled` → ledger → worker → real sandbox → draft PR on a fake GitHub.

Real pieces everywhere at the edges: `mini-fix serve` as a subprocess, a fake GitHub speaking REST and git smart
HTTP on 127.0.0.1, a scripted model speaking the OpenAI protocol, and the real Docker sandbox.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.support.app_process import AppProcess
from tests.support.fake_github import FakeGitHub, throwaway_key
from tests.support.model_server import Refusal, ScriptedModelServer, bash_reply
from tests.support.webhooks import deliver, installation_created, labeled, pr_comment

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

SECRET = "e2e-webhook-secret-5b1c9d"
REPO = "acme/calc"
FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
}
FIX = [
    bash_reply("python3 -m unittest -q 2>&1 | tail -1", "Reproduce."),
    bash_reply("sed -i 's/a - b/a + b/' calc.py && python3 -m unittest -q", "Fix the operator."),
    bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nadd() adds now; test_add passes.\\n'", "Submit."),
]


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, log: Callable[[], str] = str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{log()}")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "calc", FILES)
    fake.set_permission("alice", "write")
    fake.set_permission("mallory", "read")
    yield fake
    fake.stop()


def app_env(github: FakeGitHub, model: ScriptedModelServer, data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        "MINIFIX_APP_ID": str(github.app_id),
        "MINIFIX_PRIVATE_KEY": throwaway_key(),
        "MINIFIX_WEBHOOK_SECRET": SECRET,
        "MINIFIX_GITHUB_API_URL": github.base_url,
        **runner_env(model, data_dir),
        **extra,
    }


def runner_env(model: ScriptedModelServer, data_dir: Path) -> dict[str, str]:
    """What an e2e app needs besides its forge: the scripted model, its data, one worker, JSON logs."""
    return {
        "MINIFIX_MODEL": "hosted_vllm/scripted",
        "MINIFIX_MODEL_API_BASE": model.api_base,
        "MINIFIX_DATA_DIR": str(data_dir),
        "MINIFIX_WORKERS": "1",
        "MINIFIX_LOG_FORMAT": "json",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def jobs(data_dir: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "bot.cli", "jobs", "--json"], env=env, capture_output=True, text=True, check=True
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def sandbox_containers(deployment: str) -> set[str]:
    """This test App's sandboxes alone: the engine is shared with other runs, whose containers are not ours."""
    labels = ["mini-fix", f"mini-fix.deployment={deployment}"]
    return {c.id for c in docker.from_env().containers.list(all=True, filters={"label": labels})}


def remove_containers(ids: set[str]) -> None:
    client = docker.from_env()
    for container_id in ids:
        client.containers.get(container_id).remove(force=True)


def test_labeled_issue_becomes_a_draft_pr(github: FakeGitHub, tmp_path: Path) -> None:
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    with ScriptedModelServer(FIX) as model:
        app = AppProcess(app_env(github, model, tmp_path / "data"), tmp_path / "app.log").start()
        try:
            response = deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            assert response.status_code == 202, response.text
            pr = wait_for(lambda: github.pulls, 240, "a pull request", app.log)[0]
            wait_for(
                lambda: any("<details>" in c["body"] for c in github.comments_on(REPO, pr["number"])),
                60,
                "the trajectory comment",
                app.log,
            )
            wait_for(lambda: jobs(tmp_path / "data", app.env)[0]["status"] == "succeeded", 60, "job done", app.log)
        finally:
            app.stop()
    assert pr["draft"] is True and pr["head"]["ref"] == f"mini-fix/issue-{issue}"
    assert f"Fixes #{issue}" in pr["body"]
    assert "return a + b" in github.show(REPO, f"mini-fix/issue-{issue}", "calc.py")
    status = github.comments_on(REPO, issue)[0]["body"]
    assert "pull request" in status.lower() and pr["html_url"] in status
    assert any(r["content"] == "rocket" for r in github.reactions)
    assert len(model.requests) == 3
    assert "add(2, 3) returns -1" in model.requests[0]["messages"][1]["content"]
    # The token never reached the model or the trajectory.
    tokens = list(github.tokens)
    seen = json.dumps(model.requests) + "".join(p.read_text() for p in (tmp_path / "data").rglob("trajectory.json"))
    assert tokens and not any(token in seen for token in tokens)


def test_requester_without_write_access_gets_one_comment_and_no_run(github: FakeGitHub, tmp_path: Path) -> None:
    issue = github.add_issue(REPO, "please fix", author="mallory")
    with ScriptedModelServer(FIX) as model:
        app = AppProcess(app_env(github, model, tmp_path / "data"), tmp_path / "app.log").start()
        try:
            deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="mallory"), SECRET)
            wait_for(lambda: jobs(tmp_path / "data", app.env)[0]["status"] == "denied", 60, "denied", app.log)
        finally:
            app.stop()
    comments = github.comments_on(REPO, issue)
    assert len(comments) == 1 and "mallory" in comments[0]["body"]
    assert model.requests == [] and github.pulls == [] and github.git_requests == []


def test_killed_worker_job_is_recovered_and_completes_once(github: FakeGitHub, tmp_path: Path) -> None:
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    first_request = threading.Event()
    release = threading.Event()

    def first_step(_messages: list[dict[str, Any]]) -> str:
        first_request.set()
        release.wait(120)  # hold the first worker mid-run until it is killed
        return FIX[0]  # type: ignore[return-value]

    data = tmp_path / "data"
    deployment = f"test-{uuid.uuid4().hex[:10]}"
    before = sandbox_containers(deployment)
    with ScriptedModelServer([first_step, *FIX[1:]], by_turn=True) as model:
        env = app_env(github, model, data, MINIFIX_LEASE_SECONDS="4", MINIFIX_DEPLOYMENT=deployment)
        first = AppProcess(env, tmp_path / "first.log").start()
        try:
            deliver(f"{first.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            wait_for(first_request.is_set, 120, "the first model request", first.log)
            first.kill()  # SIGKILL: no cleanup, the lease is left to expire
            orphans = sandbox_containers(deployment) - before  # the dead worker's container, left for the sweeper
        finally:
            release.set()
            first.kill()
        second = AppProcess(env, tmp_path / "second.log").start()
        try:
            pr = wait_for(lambda: github.pulls, 240, "a pull request after recovery", second.log)[0]
            rows = wait_for(lambda: [j for j in jobs(data, env) if j["status"] == "succeeded"], 60, "done", second.log)
            left_over = orphans & sandbox_containers(deployment)
        finally:
            second.stop()
            remove_containers(orphans & sandbox_containers(deployment))
    assert orphans and not left_over  # the recovering worker removed the dead worker's container
    assert len(github.pulls) == 1 and pr["head"]["ref"] == f"mini-fix/issue-{issue}"
    assert len(rows) == 1 and rows[0]["attempts"] == 2
    assert len(jobs(data, env)) == 1
    # One status comment: the recovered run took over the one the killed worker left at "working".
    statuses = [c["body"] for c in github.comments_on(REPO, issue) if "<!-- mini-fix:status -->" in c["body"]]
    assert len(statuses) == 1 and "opened a pull request" in statuses[0], statuses


def test_retry_on_the_pr_carries_guidance_and_updates_the_same_pr(github: FakeGitHub, tmp_path: Path) -> None:
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    retry = [
        bash_reply("cat calc.py", "Follow the maintainer's guidance."),
        bash_reply("printf 'def add(a, b):\\n    return sum((a, b))\\n' > calc.py && python3 -m unittest -q"),
        bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nadd() uses sum().\\n'", "Submit."),
    ]
    with ScriptedModelServer([*FIX, *retry]) as model:
        app = AppProcess(app_env(github, model, tmp_path / "data"), tmp_path / "app.log").start()
        try:
            deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            pr = wait_for(lambda: github.pulls, 240, "the first pull request", app.log)[0]
            first_head = wait_for(lambda: github.branch_head(REPO, f"mini-fix/issue-{issue}"), 30, "branch")
            wait_for(lambda: jobs(tmp_path / "data", app.env)[0]["status"] == "succeeded", 60, "run 1", app.log)
            comment = pr_comment(REPO, pr["number"], "/agent retry use the helper sum() instead", sender="alice")
            assert deliver(f"{app.url}/webhook", "issue_comment", comment, SECRET).status_code == 202
            wait_for(lambda: len(model.requests) == 6, 240, "the retry's model calls", app.log)
            wait_for(
                lambda: (
                    [j["status"] for j in jobs(tmp_path / "data", app.env)][:1] == ["succeeded"]
                    and len(jobs(tmp_path / "data", app.env)) == 2
                ),
                120,
                "run 2",
                app.log,
            )
        finally:
            app.stop()
    assert "use the helper sum() instead" in model.requests[3]["messages"][1]["content"]
    new_head = github.branch_head(REPO, f"mini-fix/issue-{issue}")
    assert new_head != first_head and github.show(REPO, f"{new_head}^", "calc.py") == github.show(
        REPO, first_head, "calc.py"
    )  # the retry's commit sits on top of the first run's: nothing force-pushed away
    assert "sum((a, b))" in github.show(REPO, f"mini-fix/issue-{issue}", "calc.py")
    assert len(github.pulls) == 1 and "add() uses sum()" in github.pulls[0]["body"]


def test_org_config_renames_the_label_and_limits_the_steps(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_repo("acme", ".github", {".github/mini-fix.yml": "label: ai-fix\nlimits:\n  steps: 2\n"})
    issue = github.add_issue(REPO, "add() subtracts", author="alice")
    wander = [bash_reply("ls"), bash_reply("ls -a"), bash_reply("ls -la")]
    with ScriptedModelServer(wander) as model:
        app = AppProcess(app_env(github, model, tmp_path / "data"), tmp_path / "app.log").start()
        try:
            deliver(f"{app.url}/webhook", "installation", installation_created("acme", [REPO]), SECRET)
            wait_for(lambda: any(lb["name"] == "ai-fix" for lb in github.labels.get(REPO, [])), 60, "label", app.log)
            ignored = deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            assert ignored.json()["action"] == "ignore"  # the default label no longer triggers here
            deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice", label="ai-fix"), SECRET)
            wait_for(lambda: jobs(tmp_path / "data", app.env)[0]["status"] == "failed", 180, "run", app.log)
        finally:
            app.stop()
    assert len(model.requests) == 2  # the org's step limit, not agent.yaml's 50
    assert any("budget" in c["body"] and "LimitsExceeded" in c["body"] for c in github.comments_on(REPO, issue))
    assert github.pulls == []


def test_a_rate_limited_model_is_waited_out_and_the_job_opens_its_pr(github: FakeGitHub, tmp_path: Path) -> None:
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    busy = Refusal(429, {"Retry-After": "1"}, "vLLM is busy")
    with ScriptedModelServer([busy, FIX[0], Refusal(503, {"Retry-After": "1"}), *FIX[1:]]) as model:
        app = AppProcess(app_env(github, model, tmp_path / "data"), tmp_path / "app.log").start()
        try:
            deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            pr = wait_for(lambda: github.pulls, 240, "a pull request", app.log)[0]
            wait_for(lambda: jobs(tmp_path / "data", app.env)[0]["status"] == "succeeded", 60, "job done", app.log)
            log = app.log()
        finally:
            app.stop()
    assert pr["head"]["ref"] == f"mini-fix/issue-{issue}" and len(model.requests) == 5
    retries = [json.loads(line) for line in log.splitlines() if '"model_retry"' in line]
    assert [r["wait"] for r in retries] == [1.0, 1.0]  # the server's Retry-After, not our 2 s and 4 s
