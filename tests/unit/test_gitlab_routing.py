"""GitLab through the worker's seams: gateway routing, git's username, config paths, protected paths, CI evidence."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.forge_ids import installation_of
from bot.github.gateway import GitHubError
from bot.gitlab.gateway import GitLabGateway
from bot.gitlab.routing import by_forge, gitlab_factory
from bot.pipeline.git import gitops
from bot.pipeline.git.diffpaths import protected
from bot.pipeline.task.ci_evidence import read_evidence
from bot.repo_config.load import GITLAB, ConfigError, layout_for, load_repo_config
from bot.settings import Settings
from tests.support.fake_gitlab import PROTECTED_REFUSAL, FakeGitLab

PROJECT = "acme/tools/calc"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    fake = FakeGitLab()
    fake.start()
    fake.add_project(PROJECT, {"calc.py": "def add(a, b):\n    return a - b\n"})
    yield fake
    fake.stop()


def settings(fake: FakeGitLab) -> Settings:
    return Settings(gitlab_url=fake.base_url, gitlab_token=SecretStr(fake.bot_token))


def test_gitlab_installations_get_gitlab_gateways(gitlab: FakeGitLab) -> None:
    github_calls: list[tuple[int, str]] = []

    def github(installation_id: int, repo: str) -> object:
        github_calls.append((installation_id, repo))
        return object()

    route = by_forge(github, gitlab_factory(settings(gitlab)))  # type: ignore[arg-type]
    gh = route(installation_of(PROJECT), PROJECT)
    assert isinstance(gh, GitLabGateway) and gh.get_repo().full_name == PROJECT
    route(7, "octo/app")
    assert github_calls == [(7, "octo/app")]
    unset = by_forge(github, gitlab_factory(Settings()))  # type: ignore[arg-type]
    with pytest.raises(GitHubError, match="MINIFIX_GITLAB_URL"):
        unset(installation_of(PROJECT), PROJECT)


def test_git_clones_and_pushes_as_oauth2_and_a_protected_default_branch_is_refused(
    gitlab: FakeGitLab, tmp_path: Path
) -> None:
    gh = route_gitlab(gitlab)
    repo, token = gh.get_repo(), gh.git_token()
    checkout = tmp_path / "repo"
    gitops.clone(repo.clone_url, token, checkout)
    (checkout / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "-C", str(checkout), "add", "-A"], check=True)
    gitops.commit(checkout, gh.bot_identity(), "fix")
    gitops.push(checkout, token, "mini-fix/issue-1", lease=gitops.NO_BRANCH)
    assert gitlab.branch_head(PROJECT, "mini-fix/issue-1") == gitops.head(checkout)
    with pytest.raises(gitops.GitError) as refused:
        gitops.push(checkout, token, "main")
    assert PROTECTED_REFUSAL in str(refused.value) and gitlab.bot_token not in str(refused.value)
    with pytest.raises(gitops.GitError):  # GitHub's username is not GitLab's
        gitops.clone(repo.clone_url, str(token), tmp_path / "other")


def route_gitlab(fake: FakeGitLab) -> GitLabGateway:
    factory = gitlab_factory(settings(fake))
    assert factory is not None
    gh = factory(installation_of(PROJECT), PROJECT)
    assert isinstance(gh, GitLabGateway)
    return gh


def files(found: dict[tuple[str, str], str]):  # type: ignore[no-untyped-def]
    return lambda repo, path: found.get((repo, path))


def test_gitlab_config_lives_in_dot_gitlab_with_group_defaults_in_its_mini_fix_project() -> None:
    assert layout_for(installation_of(PROJECT)) == GITLAB and layout_for(7) != GITLAB
    own = files({(PROJECT, ".gitlab/mini-fix.yml"): "label: fixme\n", (PROJECT, ".github/mini-fix.yml"): "label: no\n"})
    assert load_repo_config(PROJECT, own, layout=GITLAB).config.label == "fixme"
    group = files({("acme/tools/mini-fix", ".gitlab/mini-fix.yml"): "label: group-wide\n"})
    loaded = load_repo_config(PROJECT, group, layout=GITLAB)
    assert loaded.config.label == "group-wide" and loaded.sources == ("acme/tools/mini-fix:.gitlab/mini-fix.yml",)
    extends = files({
        (PROJECT, ".gitlab/mini-fix.yml"): "_extends: mini-fix:.gitlab/base.yml\n",
        ("acme/tools/mini-fix", ".gitlab/base.yml"): "label: based\n",
    })  # fmt: skip
    assert load_repo_config(PROJECT, extends, layout=GITLAB).config.label == "based"
    outside = files({(PROJECT, ".gitlab/mini-fix.yml"): "_extends: mini-fix:.github/base.yml\n"})
    with pytest.raises(ConfigError, match=r"under `\.gitlab/`"):
        load_repo_config(PROJECT, outside, layout=GITLAB)
    github = files({("acme/.github", ".github/mini-fix.yml"): "label: org\n"})
    assert load_repo_config("acme/app", github).config.label == "org"  # GitHub's paths unchanged


def test_gitlab_ci_definition_is_a_protected_path() -> None:
    assert protected([".gitlab-ci.yml", "src/.gitlab-ci.yml", "calc.py", ".github/workflows/ci.yml"]) == [
        ".gitlab-ci.yml",
        ".github/workflows/ci.yml",
    ]


def test_ci_evidence_reads_a_failed_gitlab_jobs_trace(gitlab: FakeGitLab) -> None:
    trace = (
        "section_start:1:step_script\r\x1b[0K$ pytest\n\x1b[31mFAILED test_add\x1b[0m\nERROR: Job failed: exit code 1\n"
    )
    gitlab.add_pipeline(PROJECT, "b" * 40, "mini-fix/issue-1", [("unit tests", "failed", trace)])
    evidence = read_evidence(route_gitlab(gitlab), "b" * 40, [gitlab.bot_token])
    [failure] = evidence.failures
    assert failure.name == "unit tests" and "FAILED test_add" in failure.log and "\x1b" not in failure.log
    assert "section_start" not in failure.log and evidence.unread == ()
