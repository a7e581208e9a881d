"""A GitLab job through the real pipeline: the fake GitLab over HTTP and git, a host-side sandbox, a scripted model."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.agent.config import load_config
from bot.forge_ids import installation_of, mr_number
from bot.github.gateway import GitHubGateway
from bot.gitlab.routing import by_forge, gitlab_factory
from bot.jobs import Job, JobDetails, JobKind, JobStatus
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.publish.outbound import redacting
from bot.pipeline.run import run_pipeline
from bot.pipeline.task.followup import IssueJobs
from bot.repo_config.schema import DEFAULT_CI_FOLLOWUPS
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


LAST_MODEL: list[ScriptedModel] = []  # the latest run's model, for what its task said


def no_github(installation_id: int, repo: str) -> GitHubGateway:
    raise AssertionError(f"a GitLab job asked GitHub for {repo}")


def run(
    gitlab: FakeGitLab, tmp_path: Path, replies: list[Any], *, issue_jobs: IssueJobs | None = None, **job: Any
) -> tuple[Any, list[FakeSandbox]]:
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

    (tmp_path / "work").mkdir(parents=True, exist_ok=True)
    model = ScriptedModel(replies)
    LAST_MODEL[:] = [model]
    forges = redacting(by_forge(no_github, gitlab_factory(settings)), settings.secrets)
    deps = PipelineDeps(
        settings, forges, sandbox, lambda _: model, load_config(), workdir=tmp_path / "work", issue_jobs=issue_jobs
    )
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


TRACE = (
    '\x1b[0Ksection_start:1767268800:step_script\r\x1b[0K\x1b[0K\x1b[36;1mExecuting "step_script"\x1b[0;m\n'
    "$ python3 -m unittest\n\x1b[31mFAIL: test_add (test_calc.T.test_add)\x1b[0m\n"
    "AssertionError: 5 != 4 (add(2, 2) is off)\n"
    "\x1b[0Ksection_end:1767268801:step_script\r\x1b[0K\n\x1b[31;1mERROR: Job failed: exit code 1\x1b[0;m\n"
)


def test_a_failed_pipeline_on_the_bots_mr_is_followed_up_with_its_trace(gitlab: FakeGitLab, tmp_path: Path) -> None:
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 2) returns 0", author="alice")
    first, _ = run(gitlab, tmp_path, [FIX, bash(SUBMIT)], issue=iid)
    assert first.status == JobStatus.SUCCEEDED, first.error
    [mr] = gitlab.merge_requests
    branch = f"mini-fix/issue-{iid}"
    sha = gitlab.branch_head(PROJECT, branch)
    assert sha
    gitlab.add_pipeline(PROJECT, sha, branch, [("unit", "failed", TRACE), ("lint", "success", "ok")])
    again = bash("printf 'def add(a, b):\\n    return a + b  # v2\\n' > calc.py")
    details = JobDetails(pull_request=mr_number(mr["iid"]), head_sha=sha)
    outcome, _ = run(gitlab, tmp_path / "ci", [again, bash(SUBMIT)], id="job2", kind=JobKind.CI, issue=iid,
                     requester="mini-fix-bot", details=details)  # fmt: skip
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert "# v2" in gitlab.show(PROJECT, branch, "calc.py") and len(gitlab.merge_requests) == 1
    task = LAST_MODEL[0].requests[0][1]["content"]
    assert "CI failed on the previous change" in task and "AssertionError: 5 != 4" in task
    assert "\x1b" not in task and "section_start" not in task and "`unit`" in task and "`lint`" not in task


def test_a_reviewers_unresolved_threads_are_followed_up(gitlab: FakeGitLab, tmp_path: Path) -> None:
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 2) returns 0", author="alice")
    first, _ = run(gitlab, tmp_path, [FIX, bash(SUBMIT)], issue=iid)
    assert first.status == JobStatus.SUCCEEDED, first.error
    [mr] = gitlab.merge_requests
    gitlab.add_diff_note(PROJECT, mr["iid"], "Name the operands x and y.", "alice", "calc.py", 2)
    again = bash("printf 'def add(x, y):\\n    return x + y\\n' > calc.py")
    details = JobDetails(pull_request=mr_number(mr["iid"]), review_id=gitlab.user_id("alice"))
    outcome, _ = run(gitlab, tmp_path / "review", [again, bash(SUBMIT)], id="job2", kind=JobKind.REVIEW, issue=iid,
                     details=details)  # fmt: skip
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    task = LAST_MODEL[0].requests[0][1]["content"]
    assert "Name the operands x and y." in task and "`calc.py` line 2" in task
    assert "return x + y" in gitlab.show(PROJECT, f"mini-fix/issue-{iid}", "calc.py")


def test_a_branch_pipelines_follow_up_finds_the_open_mr_of_its_branch(gitlab: FakeGitLab, tmp_path: Path) -> None:
    other = gitlab.add_issue(PROJECT, "unrelated")  # issue #1, so the MR (!1) and the issue (#2) differ in number
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 2) returns 0", author="alice")
    first, _ = run(gitlab, tmp_path, [FIX, bash(SUBMIT)], issue=iid)
    assert first.status == JobStatus.SUCCEEDED, first.error
    [mr] = gitlab.merge_requests
    branch = f"mini-fix/issue-{iid}"
    sha = gitlab.branch_head(PROJECT, branch)
    assert sha and mr["iid"] != iid
    gitlab.add_pipeline(PROJECT, sha, branch, [("unit", "failed", TRACE)])
    again = bash("printf 'def add(a, b):\\n    return a + b  # v2\\n' > calc.py")
    details = JobDetails(head_sha=sha)  # a branch pipeline's hook names no merge request
    outcome, _ = run(gitlab, tmp_path / "ci", [again, bash(SUBMIT)], id="job2", kind=JobKind.CI, issue=iid,
                     requester="mini-fix-bot", details=details)  # fmt: skip
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert "# v2" in gitlab.show(PROJECT, branch, "calc.py") and len(gitlab.merge_requests) == 1
    assert "AssertionError: 5 != 4" in LAST_MODEL[0].requests[0][1]["content"]
    assert gitlab.notes_on(PROJECT, other) == []


def test_a_branch_pipelines_follow_up_ends_quietly_when_its_mr_was_closed(gitlab: FakeGitLab, tmp_path: Path) -> None:
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 2) returns 0", author="alice")
    first, _ = run(gitlab, tmp_path, [FIX, bash(SUBMIT)], issue=iid)
    assert first.status == JobStatus.SUCCEEDED, first.error
    [mr] = gitlab.merge_requests
    sha = gitlab.branch_head(PROJECT, f"mini-fix/issue-{iid}")
    assert sha
    gitlab.close_mr(PROJECT, mr["iid"])
    notes = len(gitlab.notes)
    outcome, boxes = run(gitlab, tmp_path / "ci", [], id="job2", kind=JobKind.CI, issue=iid,
                         requester="mini-fix-bot", details=JobDetails(head_sha=sha))  # fmt: skip
    assert outcome.status == JobStatus.CANCELLED and "no open pull request" in str(outcome.error)
    assert len(gitlab.notes) == notes and boxes == [] and LAST_MODEL[0].requests == []


def test_a_branch_pipelines_follow_up_counts_toward_the_mrs_ci_follow_up_bound(
    gitlab: FakeGitLab, tmp_path: Path
) -> None:
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 2) returns 0", author="alice")
    first, _ = run(gitlab, tmp_path, [FIX, bash(SUBMIT)], issue=iid)
    assert first.status == JobStatus.SUCCEEDED, first.error
    [mr] = gitlab.merge_requests
    sha = gitlab.branch_head(PROJECT, f"mini-fix/issue-{iid}")
    assert sha
    gitlab.add_pipeline(PROJECT, sha, f"mini-fix/issue-{iid}", [("unit", "failed", TRACE)])
    fields = {"kind": JobKind.CI, "installation_id": installation_of(PROJECT), "repo": PROJECT, "issue": iid,
              "requester": "mini-fix-bot", "status": JobStatus.SUCCEEDED}  # fmt: skip
    earlier = [Job(id=f"ci{n}", delivery_id=f"d{n}", **fields) for n in range(DEFAULT_CI_FOLLOWUPS)]
    outcome, boxes = run(gitlab, tmp_path / "ci", [], id="job2", kind=JobKind.CI, issue=iid, requester="mini-fix-bot",
                         details=JobDetails(head_sha=sha), issue_jobs=lambda repo, number: earlier)  # fmt: skip
    assert outcome.status == JobStatus.CANCELLED and "ci_followups" in str(outcome.error) and boxes == []
    [note] = [n["body"] for n in gitlab.notes_on(PROJECT, mr["iid"], "merge_requests") if "limit" in n["body"]]
    assert f"{DEFAULT_CI_FOLLOWUPS} CI follow-ups" in note  # said on the MR the branch's pipeline failed for
