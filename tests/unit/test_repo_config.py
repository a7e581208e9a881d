"""`.github/mini-fix.yml`: read through the fake GitHub's contents API with the App's real client."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.agent.config import load_config
from bot.github.app import GitHubApp
from bot.pipeline.admit.gate import guidance, reader
from bot.pipeline.runconfig import resolve
from bot.repo_config.load import ConfigError, LoadedConfig, load_repo_config, parse_extends
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from tests.support.fake_github import FakeGitHub, throwaway_key
from tests.support.fake_github_config import commit_files
from tests.support.unpaced import unpaced

REPO = "acme/widgets"
CONFIG = ".github/mini-fix.yml"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "widgets", {"README.md": "widgets\n"})
    yield fake
    fake.stop()


def load(github: FakeGitHub, repo: str = REPO) -> LoadedConfig:
    settings = Settings(app_id=github.app_id, private_key=throwaway_key(), github_api_url=github.base_url)
    app = GitHubApp(settings, pacers=unpaced())
    return load_repo_config(repo, reader(app.for_repo, 7, app.for_repo(7, repo), repo))


def test_no_file_anywhere_gives_the_built_in_defaults(github: FakeGitHub) -> None:
    loaded = load(github)
    assert loaded.config == RepoConfig() and loaded.sources == ()


def test_the_repository_file_is_read_from_the_default_branch(github: FakeGitHub) -> None:
    commit_files(github, REPO, {CONFIG: "label: ai-fix\nlimits:\n  steps: 12\nsetup: [pip install -e .]\n"})
    loaded = load(github)
    assert loaded.config.label == "ai-fix" and loaded.config.limits.steps == 12
    assert loaded.config.setup == ["pip install -e ."]
    assert loaded.sources == (f"{REPO}:{CONFIG}",)
    assert ("GET", f"/repos/{REPO}/contents/{CONFIG}") in github.requests


def test_a_file_on_another_branch_is_ignored(github: FakeGitHub) -> None:
    commit_files(github, REPO, {CONFIG: "enabled: false\n"}, branch="feature")
    assert load(github).config.enabled is True


def test_the_org_dotgithub_repository_is_the_fallback(github: FakeGitHub) -> None:
    github.add_repo("acme", ".github", {CONFIG: "label: org-fix\nmodel: hosted_vllm/org\n"})
    loaded = load(github)
    assert loaded.config.label == "org-fix" and loaded.config.model == "hosted_vllm/org"
    assert loaded.sources == (f"acme/.github:{CONFIG}",)


def test_a_repository_file_wins_over_the_org_file_without_extends(github: FakeGitHub) -> None:
    github.add_repo("acme", ".github", {CONFIG: "label: org-fix\n"})
    commit_files(github, REPO, {CONFIG: "instructions: be brief\n"})
    loaded = load(github)
    assert loaded.config.label is None and loaded.config.instructions == "be brief"


def test_extends_merges_across_repositories_and_paths_deeply(github: FakeGitHub) -> None:
    github.add_repo("acme", ".github", {CONFIG: "_extends: shared:.github/base.yml\nlimits:\n  tokens: 5000\n"})
    github.add_repo(
        "acme", "shared", {".github/base.yml": "label: base\nlimits:\n  steps: 7\n  tokens: 9\nsetup: [a, b]\n"}
    )
    commit_files(github, REPO, {CONFIG: "_extends: .github\nlimits:\n  steps: 30\nsetup: [c]\n"})
    loaded = load(github)
    assert loaded.config.label == "base"  # from the bottom of the chain
    assert (loaded.config.limits.steps, loaded.config.limits.tokens) == (30, 5000)  # deep merge, nearest wins
    assert loaded.config.setup == ["c"]  # lists replace
    assert loaded.sources == (f"{REPO}:{CONFIG}", f"acme/.github:{CONFIG}", "acme/shared:.github/base.yml")


def test_an_extends_loop_is_an_error_naming_the_chain(github: FakeGitHub) -> None:
    github.add_repo("acme", "a", {CONFIG: "_extends: acme/b\n"})
    github.add_repo("acme", "b", {CONFIG: "_extends: widgets\n"})
    commit_files(github, REPO, {CONFIG: "_extends: a\n"})
    with pytest.raises(ConfigError, match="loops") as error:
        load(github)
    assert error.value.source == f"{REPO}:{CONFIG}"
    assert f"acme/b:{CONFIG} -> {REPO}:{CONFIG}" in error.value.message


def test_extends_naming_a_missing_file_is_an_error(github: FakeGitHub) -> None:
    commit_files(github, REPO, {CONFIG: "_extends: nowhere\n"})
    with pytest.raises(ConfigError, match="acme/nowhere"):
        load(github)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("labell: x\n", "labell: Extra inputs are not permitted"),
        ("limits:\n  steps: many\n", "limits.steps: Input should be a valid integer"),
        ("- a list\n", "must be a YAML mapping"),
        ("label: [unclosed\n", "not valid YAML"),
    ],
)
def test_an_invalid_file_of_the_repository_says_what_and_where(github: FakeGitHub, text: str, expected: str) -> None:
    commit_files(github, REPO, {CONFIG: text})
    with pytest.raises(ConfigError) as error:
        load(github)
    assert error.value.source == f"{REPO}:{CONFIG}" and expected in error.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("enabled: true\nlabell: x\n", "not a valid mini-fix config at line 2"),
        ("limits:\n  steps: many\n", "not a valid mini-fix config at line 1"),
        ("- a list\n", "the file must be a YAML mapping, not a list"),
        ("label: ok\nlabel2: [unclosed\n", "not valid YAML (line 3)"),
    ],
)
def test_an_invalid_file_of_another_repository_names_only_file_and_line(
    github: FakeGitHub, text: str, expected: str
) -> None:
    # Change on purpose (issue 22): another repository's keys and lines are never quoted back.
    github.add_repo("acme", ".github", {CONFIG: "_extends: shared\n"})
    github.add_repo("acme", "shared", {CONFIG: text})
    with pytest.raises(ConfigError) as error:
        load(github)
    assert error.value.source == f"acme/shared:{CONFIG}" and error.value.message == expected


def test_parse_extends_defaults() -> None:
    assert parse_extends("repo", "acme") == ("acme/repo", CONFIG)
    assert parse_extends("other/repo:x/y.yml", "acme") == ("other/repo", "x/y.yml")


def test_limits_model_image_and_network_are_applied(tmp_path: Path) -> None:
    settings = Settings(sandbox_memory="1g", step_limit=40, allow_setup_network=True, _env_file=None)
    config = RepoConfig.model_validate(
        {"model": "hosted_vllm/big", "image": "img:2", "limits": {"steps": 9, "cpus": 2, "wall_time": 600},
         "setup": ["make deps"], "setup_network": True}
    )  # fmt: skip
    resolved = resolve(settings, load_config(), config, ceilings=False)
    agent, sandbox = resolved.agent, resolved.sandbox
    assert (agent.agent.step_limit, agent.agent.wall_time_limit_seconds) == (9, 600)
    assert agent.model.model_name == "hosted_vllm/big"
    assert (sandbox.image, sandbox.memory, sandbox.cpus, sandbox.network) == ("img:2", "1g", 2, True)
    assert sandbox.wall_time_seconds >= 600
    plain = resolve(settings, load_config(), RepoConfig())
    assert plain.agent.agent.step_limit == 40  # the operator's default
    assert plain.sandbox.network is False


def test_guidance_joins_instructions_and_agents_md(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    commit = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q"]
    subprocess.run([*commit, "--allow-empty", "-m", "empty"], check=True)
    assert guidance(RepoConfig(), tmp_path) == ""
    (tmp_path / "AGENTS.md").write_text("Run `make test` before submitting.\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "AGENTS.md"], check=True)
    subprocess.run([*commit, "-m", "agents"], check=True)
    text = guidance(RepoConfig(instructions="Keep the public API stable."), tmp_path)
    assert "Keep the public API stable." in text and "Run `make test` before submitting." in text
