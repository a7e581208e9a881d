"""The job's wall time (MINIFIX_MAX_WALL_TIME) running out end to end: `mini-fix serve`, the real Docker sandbox, a
scripted model that fixes at once and keeps working. The agent is stopped at its next step, its tree taken out of
the container still there, and the change opened as a `[WIP]` draft naming the wall time; no container is left."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_attempts_flow import REPO, github, job_containers, one_job
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.model_server import ScriptedModelServer, bash_reply

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
__all__ = ["github"]

WORKING = [bash_reply("sed -i 's/a - b/a + b/' calc.py"), *[bash_reply(f"sleep 2; echo {i}") for i in range(60)]]
WALL = "the job's wall time over all attempts (20 s, MINIFIX_MAX_WALL_TIME) ran out"


def test_a_run_out_wall_time_opens_the_work_so_far_as_a_wip_draft(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {".github/mini-fix.yml": "attempts: 1\n"})  # one attempt, no test to verify
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    with ScriptedModelServer(WORKING) as model:
        row = one_job(github, model, tmp_path, issue, MINIFIX_MAX_WALL_TIME="20")
    assert row["status"] == "succeeded", row
    [pr] = github.pulls
    assert pr["draft"] and pr["title"].startswith("[WIP] ") and WALL in pr["body"]
    assert "return a + b" in github.show(REPO, f"mini-fix/issue-{issue}", "calc.py")
    assert len(model.requests) < len(WORKING)  # stopped by the wall time, not at the script's end
    assert job_containers(row["id"]) == []
