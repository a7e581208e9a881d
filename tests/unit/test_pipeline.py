"""The pipeline against the fake GitHub (real HTTP, real git), a host-side sandbox and a scripted model."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.agent.config import load_config
from bot.agent.errors import ModelUnavailable
from bot.github.app import GitHubApp
from bot.jobs import SHUTDOWN_REASON, CancelSignal, Job, JobDetails, JobKind, JobStatus
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.run import run_pipeline as run_job
from bot.settings import Settings
from sandbox.base import EngineUnavailable, ExecResult, ImageMissing, Sandbox, SandboxConfig
from tests.support.fake_github import FakeGitHub, throwaway_key, widgets_github
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash
from tests.support.unpaced import unpaced

REPO = "acme/widgets"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FIX = bash("printf 'def add(a, b):\\n    return a + b\\n' > calc.py")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    yield from widgets_github()


class OnlineSandbox(FakeSandbox):
    """A fake sandbox started with the setup proxy's network, which it can cut."""

    def disconnect_network(self) -> None:
        self.commands.append("<network cut>")


class World:
    """One test's collaborators: the fake GitHub, the settings, the scripted model, the sandboxes made."""

    def __init__(self, github: FakeGitHub, tmp_path: Path, replies: list[Any]) -> None:
        self.github = github
        self.settings = Settings(
            app_id=github.app_id,
            private_key=throwaway_key(),
            github_api_url=github.base_url,
            data_dir=tmp_path / "data",
            model="scripted/test",
        )
        self.model = ScriptedModel(replies)
        self.sandboxes: list[FakeSandbox] = []
        self.configs: list[SandboxConfig] = []
        self.results: dict[str, ExecResult] = {}  # scripted commands, for every sandbox
        self.sandbox_error: Exception | None = None
        self.workdir = tmp_path / "work"
        self.workdir.mkdir()
        self.issue = github.add_issue(REPO, "add() subtracts", "calc.add(2, 2) returns 0", author="alice")

    def sandbox(self, config: SandboxConfig, run_id: str) -> Sandbox:
        if self.sandbox_error:
            raise self.sandbox_error
        box = OnlineSandbox(results=self.results) if config.network else FakeSandbox(results=self.results)
        self.sandboxes.append(box)
        self.configs.append(config)
        return box

    def deps(self) -> PipelineDeps:
        """The pipeline's collaborators: the fake GitHub over HTTP, fake sandboxes, the scripted model."""
        return PipelineDeps(
            self.settings,
            GitHubApp(self.settings, pacers=unpaced()).for_repo,
            self.sandbox,
            lambda _: self.model,
            load_config(),
            workdir=self.workdir,
        )

    def run(self, requester: str = "alice", cancel: threading.Event | None = None, **job: Any) -> Any:
        deps = self.deps()
        fields = {
            "id": "job1",
            "kind": JobKind.FIX,
            "installation_id": 7,
            "repo": REPO,
            "issue": self.issue,
            "requester": requester,
            "delivery_id": "d1",
            **job,
        }
        return run_job(Job(**fields), cancel or threading.Event(), deps)

    def issue_comments(self) -> list[str]:
        return [c["body"] for c in self.github.comments_on(REPO, self.issue)]

    def reactions(self) -> list[str]:
        return [r["content"] for r in self.github.reactions if r["comment_id"] is None]


def test_success_opens_a_draft_pr_with_the_change_and_the_trajectory(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = github.pulls
    assert pr["draft"] and pr["body"].startswith(f"Fixes #{world.issue}") and pr["title"] == "add() subtracts"
    assert outcome.pr_url == pr["html_url"]
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "return a + b" in github.show(REPO, head, "calc.py")
    assert "mini-fix trajectory" in github.comments_on(REPO, pr["number"])[0]["body"]
    status = world.issue_comments()[0]
    assert "opened a pull request" in status and pr["html_url"] in status
    assert world.reactions() == ["eyes", "rocket"]
    assert list(world.workdir.iterdir()) == [] and world.sandboxes[0].closed
    assert (world.settings.data_dir / "runs" / outcome.run_id / "trajectory.json").exists()


def test_the_inferred_test_command_and_why_are_in_the_status_comment_and_the_pr(
    github: FakeGitHub, tmp_path: Path
) -> None:
    test = "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n"
    github.add_repo(
        "acme",
        "tested",
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "test_calc.py": test + "        self.assertEqual(add(2, 2), 4)\n",
        },
    )
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.issue = github.add_issue("acme/tested", "add() subtracts", "", author="alice")
    outcome = world.run(repo="acme/tested")
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    said = "`python3 -m unittest discover -t . -s .` (inferred: Python test files"
    [pr] = github.pulls
    assert f"Test command: {said}" in pr["body"] and "passed" in pr["body"]
    assert f"tests: {said}" in github.comments_on("acme/tested", world.issue)[0]["body"]
    assert "The repository's tests run with `python3 -m unittest" in world.model.requests[0][1]["content"]


def test_how_setup_went_is_in_the_status_comment_and_the_pr(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_repo(
        "acme",
        "setup",
        {"calc.py": "def add(a, b):\n    return a - b\n", ".github/mini-fix.yml": "setup:\n  - touch .ready\n"},
    )
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.issue = github.add_issue("acme/setup", "add() subtracts", "", author="alice")
    outcome = world.run(repo="acme/setup")
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = github.pulls
    assert "The repository's setup: ran in 0 s" in pr["body"]  # fake sandboxes cannot stream: no cache
    assert "> :package: setup: ran in 0 s" in github.comments_on("acme/setup", world.issue)[0]["body"]
    assert all(".ready" in "".join(box.commands) for box in world.sandboxes)


GO_MOD = "module calc\n\ngo 1.21\n\nrequire github.com/spf13/pflag v1.0.5\n"


def test_an_inferred_setup_runs_with_the_proxy_network_and_the_comment_says_where_it_came_from(
    github: FakeGitHub, tmp_path: Path
) -> None:
    github.add_repo("acme", "deps", {"calc.py": "def add(a, b):\n    return a - b\n", "go.mod": GO_MOD})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.results["go mod download"] = ExecResult("", 0)
    world.issue = github.add_issue("acme/deps", "add() subtracts", "", author="alice")
    outcome = world.run(repo="acme/deps")
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    said = r"ran in 0 s \(\d sandboxes\) — `go mod download` \(inferred from go.mod\)"
    assert re.search(f"> :package: setup: {said}\n", github.comments_on("acme/deps", world.issue)[0]["body"])
    assert re.search(f"The repository's setup: {said}[.]\n", github.pulls[0]["body"])
    ran = [box.commands for box in world.sandboxes if "go mod download" in box.commands]
    assert ran and all(c.index("go mod download") < c.index("<network cut>") for c in ran)
    # The attempt's sandbox started during the clone had no network: it was removed unused, and one with it made.
    early = [box for box, config in zip(world.sandboxes, world.configs, strict=True) if not config.network]
    assert [(box.closed, box.commands) for box in early] == [(True, [])]
    assert all(c.setup_env["GOPROXY"].get_secret_value() == "https://proxy.golang.org" for c in world.configs)


def test_a_failing_inferred_setup_is_reported_and_the_run_goes_on(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_repo("acme", "deps", {"calc.py": "def add(a, b):\n    return a - b\n", "go.mod": GO_MOD})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.results["go mod download"] = ExecResult("go: downloading pflag\ngo: pflag: 403 Forbidden\n", 1)
    world.issue = github.add_issue("acme/deps", "add() subtracts", "", author="alice")
    outcome = world.run(repo="acme/deps")
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    said = "**failed** after 0 s, so the tests may not run: `go mod download` exited with 1: go: pflag: 403 Forbidden"
    assert said in github.comments_on("acme/deps", world.issue)[0]["body"]
    assert said in github.pulls[0]["body"]
    assert sum(box.commands.count("go mod download") for box in world.sandboxes) == 1  # not again in later ones


def test_a_failing_setup_the_repository_configured_still_ends_the_run(github: FakeGitHub, tmp_path: Path) -> None:
    files = {"calc.py": "x = 1\n", ".github/mini-fix.yml": "setup:\n  - go mod download\n", "go.mod": GO_MOD}
    github.add_repo("acme", "deps", files)
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.results["go mod download"] = ExecResult("no network", 1)
    world.issue = github.add_issue("acme/deps", "add() subtracts", "", author="alice")
    outcome = world.run(repo="acme/deps")
    assert outcome.status == JobStatus.FAILED and "setup" in (outcome.error or "")
    assert not any(c.network for c in world.configs)  # `setup_network` not asked for: offline, as before


def test_a_second_run_updates_the_same_pr(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    first = world.run()
    second = world.run(kind=JobKind.RETRY, guidance="also add a comment")
    assert first.status == second.status == JobStatus.SUCCEEDED
    assert len(github.pulls) == 1 and second.pr_url == first.pr_url
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "# v2" in github.show(REPO, head, "calc.py")
    assert "also add a comment" in world.model.requests[2][1]["content"]


def test_requester_without_write_access_is_denied_with_one_comment(github: FakeGitHub, tmp_path: Path) -> None:
    github.set_permission("mallory", "triage")
    world = World(github, tmp_path, [])
    outcome = world.run(requester="mallory")
    assert outcome.status == JobStatus.DENIED
    [comment] = world.issue_comments()
    assert "@mallory" in comment and "write" in comment
    assert github.git_requests == [] and world.sandboxes == []


def test_empty_diff_ends_with_a_comment(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and outcome.error == "empty_diff"
    assert "made no changes" in world.issue_comments()[-1] and "/agent retry" in world.issue_comments()[-1]
    assert github.pulls == [] and world.reactions()[-1] == "confused"
    assert list(world.workdir.iterdir()) == []


def test_workflow_changes_are_not_pushed(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(
        github,
        tmp_path,
        [bash("mkdir -p .github/workflows && echo x > .github/workflows/ci.yml"), bash(SUBMIT)],
    )
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and outcome.error and "protected_paths" in outcome.error
    assert github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None and github.pulls == []
    assert (
        "<code>.github/workflows/ci.yml</code>" in world.issue_comments()[-1]
        and "workflows" in world.issue_comments()[-1]
    )


def test_unreachable_model_ends_with_a_comment(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [ModelUnavailable("connection refused")])
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and outcome.error and outcome.error.startswith("model_unavailable")
    assert outcome.error == "model_unavailable: ModelUnavailable: connection refused"  # the cause, not only the class
    assert "could not be reached" in world.issue_comments()[-1] and "connection refused" in world.issue_comments()[-1]
    assert list(world.workdir.iterdir()) == [] and world.sandboxes[0].closed


@pytest.mark.parametrize(
    ("error", "says"),
    [(EngineUnavailable("no docker"), "no sandbox engine"), (ImageMissing("no image"), "image is missing")],
)
def test_sandbox_start_failure_ends_with_a_comment(
    github: FakeGitHub, tmp_path: Path, error: Exception, says: str
) -> None:
    world = World(github, tmp_path, [])
    world.sandbox_error = error
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED
    assert says in world.issue_comments()[-1] and list(world.workdir.iterdir()) == []


def test_clone_failure_ends_with_a_comment(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [])
    github.repos[REPO]["bare"].rename(github.root / "moved.git")
    outcome = world.run()
    assert outcome.error and outcome.error.startswith("clone_failed")
    assert "could not be cloned" in world.issue_comments()[-1]
    assert "ghs_" not in world.issue_comments()[-1] and list(world.workdir.iterdir()) == []


def test_cancel_stops_and_says_so(github: FakeGitHub, tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run(cancel=cancel)
    assert outcome.status == JobStatus.CANCELLED
    assert "stopped" in world.issue_comments()[0] and github.pulls == []


def test_a_worker_shutdown_says_the_job_will_run_again(github: FakeGitHub, tmp_path: Path) -> None:
    cancel = CancelSignal()
    cancel.cancel(SHUTDOWN_REASON)
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run(cancel=cancel)
    assert outcome.status == JobStatus.QUEUED
    comments = world.issue_comments()
    assert len(comments) == 1 and "paused: the worker running it was restarted" in comments[0]
    assert "/agent retry" not in comments[0] and github.pulls == []


def test_retry_from_a_pr_finds_its_issue(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT), bash("echo '# again' >> calc.py"), bash(SUBMIT)])
    world.run()
    pr = github.pulls[0]["number"]
    comment = github.add_comment(REPO, pr, "/agent retry please", "alice")
    outcome = world.run(kind=JobKind.RETRY, issue=pr, comment_id=comment, details=JobDetails(on_pull_request=True))
    assert outcome.status == JobStatus.SUCCEEDED and len(github.pulls) == 1
    assert any(r["comment_id"] == comment and r["content"] == "eyes" for r in github.reactions)


def test_a_job_resumed_after_a_shutdown_edits_its_one_status_comment(github: FakeGitHub, tmp_path: Path) -> None:
    cancel = CancelSignal()
    cancel.cancel(SHUTDOWN_REASON)
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    assert world.run(cancel=cancel, attempts=1).status == JobStatus.QUEUED
    [paused] = github.comments_on(REPO, world.issue)
    assert "paused" in paused["body"] and "<!-- mini-fix:job job1 -->" in paused["body"]
    outcome = world.run(attempts=1)  # the same job claimed again: a shutdown gave its attempt back
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [status] = github.comments_on(REPO, world.issue)
    assert status["id"] == paused["id"] and "opened a pull request" in status["body"]
    assert "paused" not in status["body"] and "working" not in status["body"]


def test_a_new_job_posts_its_own_status_comment(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    world.run()
    world.run(id="job2", kind=JobKind.RETRY)  # another job on the same issue: its own comment, the first kept
    statuses = [c["body"] for c in github.comments_on(REPO, world.issue) if "mini-fix:status" in c["body"]]
    assert len(statuses) == 2 and "mini-fix:job job1" in statuses[0] and "mini-fix:job job2" in statuses[1]


def test_a_resumed_job_takes_over_only_its_own_bots_comment(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    frozen = "working, step 4 of 50\n<!-- mini-fix:status -->\n<!-- mini-fix:job job1 -->"
    github.add_comment(REPO, world.issue, frozen, "mallory")  # a person pasting the markers is not the App
    github.add_comment(REPO, world.issue, frozen.replace("job1", "job0"), "mini-fix-test[bot]")  # another job's
    mine = github.add_comment(REPO, world.issue, frozen, "mini-fix-test[bot]")  # a worker SIGKILLed mid-run
    assert world.run(attempts=3).status == JobStatus.SUCCEEDED
    bodies = {c["id"]: c["body"] for c in github.comments_on(REPO, world.issue)}
    assert len(bodies) == 3 and "opened a pull request" in bodies[mine]
    assert sum("opened a pull request" in b for b in bodies.values()) == 1


def test_a_rate_limit_that_outlasts_the_retries_mid_run_pauses_the_job_and_the_next_claim_opens_the_pr(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # githubkit's waits within the bound
    refusal = github.faults.secondary_rate_limit("POST", r"/pulls$", count=None, retry_after=30)
    world = World(github, tmp_path, [FIX, bash(SUBMIT), FIX, bash(SUBMIT)])
    first = world.run(attempts=1)
    assert first.status == JobStatus.QUEUED and first.retry_in == 30  # back to the queue, not failed
    assert first.error and first.error.startswith("github_rate_limited:")
    assert github.pulls == [] and refusal.hits > 1
    [status] = world.issue_comments()
    assert "paused" in status.lower()
    github.faults.rules.clear()
    second = world.run(attempts=2)
    assert second.status == JobStatus.SUCCEEDED, second.error
    [pr] = github.pulls
    [status] = world.issue_comments()  # the same status comment, now with the PR
    assert pr["html_url"] in status
