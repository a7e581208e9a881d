"""A GitLab job through the real pipeline: the fake GitLab over HTTP and git, a host-side sandbox, a scripted model."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.agent.config import load_config
from bot.github.gateway import GitHubGateway
from bot.gitlab.ids import installation_of
from bot.gitlab.routing import by_forge, gitlab_factory
from bot.jobs import Job, JobKind, JobStatus
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.publish.outbound import redacting
from bot.pipeline.run import run_pipeline
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig
from tests.support.fake_gitlab import FakeGitLab
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash

PROJECT = "acme/tools/calc"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FIX = bash("printf 'def add(a, b):\\n    return a + b\\n' > calc.py")


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    fake = FakeGitLab()
    fake.start()
    fake.add_project(PROJECT, {"calc.py": "def add(a, b):\n    return a - b\n"})
    fake.set_access("acme", "alice", 30)  # a Developer through the group
    yield fake
    fake.stop()


def no_github(installation_id: int, repo: str) -> GitHubGateway:
    raise AssertionError(f"a GitLab job asked GitHub for {repo}")


def run(gitlab: FakeGitLab, tmp_path: Path, replies: list[Any], **job: Any) -> tuple[Any, list[FakeSandbox]]:
    settings = Settings(
        gitlab_url=gitlab.base_url,
        gitlab_token=SecretStr(gitlab.bot_token),
        data_dir=tmp_path / "data",
        model="scripted/test",
    )
    boxes: list[FakeSandbox] = []

    def sandbox(config: SandboxConfig, run_id: str) -> Sandbox:
        boxes.append(FakeSandbox())
        return boxes[-1]

    (tmp_path / "work").mkdir(exist_ok=True)
    model = ScriptedModel(replies)
    forges = redacting(by_forge(no_github, gitlab_factory(settings)), settings.secrets)
    deps = PipelineDeps(settings, forges, sandbox, lambda _: model, load_config(), workdir=tmp_path / "work")
    fields = {"id": "job1", "kind": JobKind.FIX, "installation_id": installation_of(PROJECT), "repo": PROJECT,
              "requester": "alice", "delivery_id": "d1", **job}  # fmt: skip
    return run_pipeline(Job(**fields), threading.Event(), deps), boxes


def test_a_gitlab_fix_job_ends_in_a_draft_merge_request_that_closes_the_issue(
    gitlab: FakeGitLab, tmp_path: Path
) -> None:
    other = gitlab.add_issue(PROJECT, "unrelated")  # issue #1: the MR will be !1, the fixed issue #2
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 2) returns 0", author="alice")
    outcome, boxes = run(gitlab, tmp_path, [FIX, bash(SUBMIT)], issue=iid)
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert boxes and all(box.closed for box in boxes)
    [mr] = gitlab.merge_requests
    assert mr["title"] == "Draft: add() subtracts" and mr["source_branch"] == f"mini-fix/issue-{iid}"
    assert mr["description"].startswith(f"Closes #{iid}\n") and mr["target_branch"] == "main"
    assert outcome.pr_url == mr["web_url"]
    assert "return a + b" in gitlab.show(PROJECT, f"mini-fix/issue-{iid}", "calc.py")
    assert gitlab.show(PROJECT, "main", "calc.py").endswith("a - b\n")  # the protected default branch untouched
    [status] = [n["body"] for n in gitlab.notes_on(PROJECT, iid)]
    assert mr["web_url"] in status
    mr_notes = [n["body"] for n in gitlab.notes_on(PROJECT, mr["iid"], "merge_requests")]
    assert any("mini-fix trajectory" in body for body in mr_notes)
    assert gitlab.notes_on(PROJECT, other) == []  # MR !1's notes did not land on issue #1
    assert [a["name"] for a in gitlab.award_emoji if a["_kind"] == "issues"] == ["eyes", "rocket"]
    assert gitlab.git_requests and all(status == 200 for _, status in gitlab.git_requests)  # each as oauth2
    notes = " ".join(n["body"] for n in gitlab.notes) + mr["description"]
    assert gitlab.bot_token not in notes


def test_a_gitlab_issue_the_requester_cannot_write_is_refused(gitlab: FakeGitLab, tmp_path: Path) -> None:
    gitlab.set_access(PROJECT, "rep", 20)  # a Reporter
    iid = gitlab.add_issue(PROJECT, "add() subtracts", author="rep")
    outcome, boxes = run(gitlab, tmp_path, [], issue=iid, requester="rep")
    assert outcome.status == JobStatus.DENIED and boxes == [] and gitlab.merge_requests == []
