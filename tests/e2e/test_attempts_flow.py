"""Several attempts end to end: `mini-fix serve`, the real Docker sandbox, a scripted model per temperature.

Three attempts at one issue differ (one breaks the repository's tests, one passes with a large change and a
"reproduction" test that passes before the fix too, one passes with a small change and a real reproduction test);
the App's own verdicts choose, the PR shows the table; `/agent stop` during the attempts removes every container.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker
import pytest

from tests.e2e.test_github_flow import SECRET, app_env, jobs, wait_for
from tests.support.app_process import AppProcess
from tests.support.fake_github import FakeGitHub
from tests.support.model_server import ScriptedModelServer, bash_reply
from tests.support.webhooks import deliver, labeled, pr_comment
from tests.unit.test_attempts import ADD_TEST, BIG_FIX, CLAIM_TEST, REPO_CONFIG, TESTS, table_rows

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

REPO = "acme/calc"
FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/__init__.py": "",
    "tests/test_base.py": TESTS,
    ".github/mini-fix.yml": REPO_CONFIG,
}
SUBMIT = bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nFixed add().\\n'", "Submit.")


def write(path: str, text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "'\\''").replace("\n", "\\n").replace("%", "%%")
    return bash_reply(f"mkdir -p $(dirname {path}) && printf '{escaped}' > {path}")


SCRIPTS = {
    0.0: [bash_reply("sed -i 's/a - b/a * b/' calc.py"), SUBMIT],
    0.7: [write("calc.py", BIG_FIX), write("tests/test_claim.py", CLAIM_TEST), SUBMIT],
    1.0: [bash_reply("sed -i 's/a - b/a + b/' calc.py"), write("tests/test_add.py", ADD_TEST), SUBMIT],
}


@pytest.fixture
def github() -> FakeGitHub:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "calc", FILES)
    fake.set_permission("alice", "write")
    yield fake  # type: ignore[misc]
    fake.stop()


def job_containers(job_id: str) -> list[str]:
    """The engine's containers (running or not) labelled with this job's id."""
    # sparse: the listing alone, no inspect per container (one removed in between would raise NotFound)
    found = docker.from_env().containers.list(all=True, sparse=True, filters={"label": f"mini-fix.job-id={job_id}"})
    return [c.id for c in found]


def one_job(github: FakeGitHub, model: ScriptedModelServer, tmp_path: Path, issue: int, **env: str) -> dict[str, Any]:
    """The App serving `issue`'s label with `env` over the defaults, until its job ends: the job's ledger row."""
    data = tmp_path / "data"
    settings = app_env(github, model, data, **env)
    app = AppProcess(settings, tmp_path / "app.log").start()
    try:
        deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
        ended = wait_for(
            lambda: [j for j in jobs(data, settings) if j["status"] not in ("queued", "running")],
            300,
            "the job to end",
            app.log,
        )
    finally:
        app.stop()
    return ended[0]


def test_three_attempts_the_tested_small_fix_is_published(github: FakeGitHub, tmp_path: Path) -> None:
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    with ScriptedModelServer([], by_temperature=SCRIPTS) as model:
        row = one_job(github, model, tmp_path, issue, MINIFIX_MAX_SANDBOXES="3")
    assert row["status"] == "succeeded", row
    [pr] = github.pulls
    calc = github.show(REPO, f"mini-fix/issue-{issue}", "calc.py")
    assert "return a + b" in calc and "helper_1" not in calc
    rows = table_rows(pr["body"])
    assert set(rows) == {1, 2, 3} and [k for k in rows if "**yes**" in rows[k]] == [3]
    assert ":x: failed" in rows[1] and "passes before the fix too (no credit)" in rows[2]
    assert "fails before the fix, passes after" in rows[3]
    assert "Reproduction test" in pr["body"] and "tests/test_add.py" in pr["body"]
    temperatures = sorted({r.get("temperature") for r in model.requests})
    assert temperatures == [0.0, 0.7, 1.0]
    assert job_containers(row["id"]) == []  # every attempt's and every check's container is gone


def test_stop_during_the_attempts_removes_every_container(github: FakeGitHub, tmp_path: Path) -> None:
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    slow = [bash_reply("sleep 100"), SUBMIT]
    data = tmp_path / "data"
    with ScriptedModelServer([], by_temperature={0.0: slow, 0.7: slow, 1.0: slow}) as model:
        env = app_env(github, model, data, MINIFIX_MAX_SANDBOXES="3")
        app = AppProcess(env, tmp_path / "app.log").start()
        try:
            deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            job_id = wait_for(lambda: jobs(data, env), 60, "the job", app.log)[0]["id"]
            wait_for(lambda: len(model.requests) == 3, 180, "every attempt's first command", app.log)
            stop = pr_comment(REPO, issue, "/agent stop", sender="alice")
            del stop["issue"]["pull_request"]
            assert deliver(f"{app.url}/webhook", "issue_comment", stop, SECRET).status_code == 202
            wait_for(
                lambda: next(j for j in jobs(data, env) if j["id"] == job_id)["status"] == "cancelled",
                60,
                "the job to stop",
                app.log,
            )
            wait_for(lambda: job_containers(job_id) == [], 30, "its containers to go", app.log)
            said = wait_for(
                lambda: [c for c in github.comments_on(REPO, issue) if "stopped" in c["body"]],
                30,
                "the status",
                app.log,
            )
        finally:
            app.stop()
    assert len(model.requests) == 3 and github.pulls == []
    assert "alice" in said[0]["body"]  # the status comment says who stopped the attempts
