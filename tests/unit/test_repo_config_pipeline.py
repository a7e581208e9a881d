"""The pipeline honours `.github/mini-fix.yml`: invalid file, disabled, renamed label, allowed users, setup and test."""

from __future__ import annotations

from pathlib import Path

from bot.jobs import JobDetails, JobStatus
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit import test_pipeline
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World

github = test_pipeline.github  # the fake GitHub fixture, shared with the pipeline tests

CONFIG = ".github/mini-fix.yml"


def test_an_invalid_file_posts_one_comment_quoting_the_error_and_runs_nothing(
    github: FakeGitHub, tmp_path: Path
) -> None:
    commit_files(github, REPO, {CONFIG: "limits:\n  stepz: 3\n"})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and outcome.error and "config_invalid" in outcome.error
    [comment] = world.issue_comments()
    assert f"{REPO}:{CONFIG}" in comment and "limits.stepz: Extra inputs are not permitted" in comment
    assert world.sandboxes == [] and world.model.requests == [] and github.git_requests == []


def test_a_disabled_repository_says_so_and_runs_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_repo("acme", ".github", {CONFIG: "enabled: false\n"})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.CANCELLED
    [comment] = world.issue_comments()
    assert "enabled: false" in comment and f"acme/.github:{CONFIG}" in comment
    assert world.sandboxes == []


def test_a_label_that_is_not_the_repository_trigger_is_dropped_quietly(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_repo("acme", ".github", {CONFIG: "label: ai-fix\n"})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run(details=JobDetails(label="mini-fix"))
    assert outcome.status == JobStatus.CANCELLED and world.issue_comments() == [] and world.sandboxes == []
    assert world.run(id="job2", delivery_id="d2", details=JobDetails(label="AI-fix")).status == JobStatus.SUCCEEDED


def test_only_allowed_users_may_trigger(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "allowed_users: [bob]\nallowed_teams: [fixers]\n"})
    github.set_permission("carol", "write")
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.DENIED
    [comment] = world.issue_comments()
    assert "@alice" in comment and "allowed_users" in comment
    github.teams[("acme", "fixers")] = {"alice"}
    assert world.run(id="job2", delivery_id="d2").status == JobStatus.SUCCEEDED


def test_setup_runs_before_the_agent_and_the_test_result_goes_in_the_pr_body(
    github: FakeGitHub, tmp_path: Path
) -> None:
    config = (
        "setup:\n  - echo prepared > .setup-done\ntest: grep -q 'a + b' calc.py && echo 3 passed\n"
        "limits:\n  steps: 5\ninstructions: Never touch README.md.\n"
    )
    commit_files(github, REPO, {CONFIG: config, "AGENTS.md": "Use four spaces.\n"})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    agents, *fresh = world.sandboxes
    assert agents.commands[0] == "echo prepared > .setup-done"
    # The test ran in a fresh sandbox the App started for it, never in the one the agent worked in.
    assert not any(c.startswith("grep -q") for c in agents.commands)
    assert any(c.startswith("grep -q") for box in fresh for c in box.commands)
    task = world.model.requests[0][1]["content"]
    assert "Never touch README.md." in task and "Use four spaces." in task
    [pr] = github.pulls
    assert "3 passed" in pr["body"] and "passed" in pr["body"]
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and ".setup-done" not in github.show(REPO, head, "")  # setup output is not part of the change


def test_the_repository_step_limit_is_honoured(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "limits:\n  steps: 2\n"})
    world = World(github, tmp_path, [bash("true"), bash("true"), bash("true"), bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and outcome.error and outcome.error.startswith("limits")
    assert len(world.model.requests) == 2
