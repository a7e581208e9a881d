"""Attacks through the real pipeline (fake GitHub over HTTP, real git, host-side sandbox, scripted model)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.jobs import JobStatus
from tests.support.fake_github import FakeGitHub, throwaway_key, widgets_github
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World

OPERATOR_TOKEN = "operator-token-0123456789abcdef"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    yield from widgets_github()


def _commit_symlink(github: FakeGitHub, name: str, target: str) -> None:
    """Push a commit adding the symlink `name` -> `target` to the repository's default branch."""
    work = github.root / "_work" / REPO
    (work / name).symlink_to(target)
    who = ["-c", "user.name=Seed", "-c", "user.email=seed@example.com"]
    push = ["push", "-q", str(github.repos[REPO]["bare"]), "HEAD:refs/heads/main"]
    for args in (["add", "-A"], [*who, "commit", "-qm", "link"], push):
        subprocess.run(["git", "-C", str(work), *args], check=True)


def _everything_posted_and_stored(world: World) -> str:
    posted = [c["body"] for c in world.github.comments] + [p["body"] for p in world.github.pulls]
    stored = [p.read_text() for p in (world.settings.data_dir / "runs").rglob("trajectory.json")]
    return "\n".join([*posted, *stored])


def test_agents_md_symlinked_to_the_key_file_never_reaches_the_model_or_github(
    github: FakeGitHub, tmp_path: Path
) -> None:
    key_file = tmp_path / "app.pem"
    key_file.write_text(throwaway_key())
    _commit_symlink(github, "AGENTS.md", str(key_file))
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.settings = world.settings.model_copy(update={"private_key": None, "private_key_path": key_file})
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    prompts = json.dumps(world.model.requests)
    assert "PRIVATE KEY" not in prompts and "PRIVATE KEY" not in _everything_posted_and_stored(world)


def test_a_secret_the_agent_got_hold_of_is_redacted_everywhere_and_its_file_not_pushed(
    github: FakeGitHub, tmp_path: Path
) -> None:
    leak = bash(f"echo {OPERATOR_TOKEN} > leaked.txt && echo {OPERATOR_TOKEN}")
    submit = bash(f"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo 'done, token {OPERATOR_TOKEN}'")
    world = World(github, tmp_path, [leak, submit])
    world.settings = world.settings.model_copy(update={"operator_token": SecretStr(OPERATOR_TOKEN)})
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and "protected_paths" in (outcome.error or "")
    assert github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None
    everything = _everything_posted_and_stored(world)
    assert OPERATOR_TOKEN not in everything and "secrets" in everything


def test_a_repository_asking_for_huge_limits_is_clamped_and_told(github: FakeGitHub, tmp_path: Path) -> None:
    config = "limits:\n  steps: 1000000000\n  memory: 100000g\n  wall_time: 1000000000\nimage: attacker/img\n"
    config += "model: openai/gpt-4o\n"
    commit_files(github, REPO, {".github/mini-fix.yml": config})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.settings = world.settings.model_copy(update={"max_steps": 40})
    seen: list[object] = []
    original = world.sandbox

    def record(cfg, run_id):  # type: ignore[no-untyped-def]
        seen.append(cfg)
        return original(cfg, run_id)

    world.sandbox = record  # type: ignore[method-assign]
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    status = world.issue_comments()[0]
    assert "`limits.steps: 1000000000` is above this deployment's ceiling; used 40" in status
    assert "`limits.memory: 100000g`" in status and "attacker/img" in status and "openai/gpt-4o" in status
    [cfg] = seen
    assert cfg.memory == world.settings.max_memory and cfg.image == world.settings.sandbox_image  # type: ignore[attr-defined]
