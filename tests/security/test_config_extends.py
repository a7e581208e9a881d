"""`_extends` against an org-wide install: another repository's private files are neither read nor quoted back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.github.app import GitHubApp
from bot.pipeline.admit.gate import reader
from bot.repo_config.load import ConfigError, LoadedConfig, load_repo_config
from bot.settings import Settings
from tests.support.fake_github import FakeGitHub, throwaway_key
from tests.support.fake_github_config import commit_files

REPO = "acme/widgets"
CONFIG = ".github/mini-fix.yml"
SECRET = 'DB = "postgres://admin:Hunter2@db/prod"'


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "widgets", {"README.md": "widgets\n"})
    fake.add_repo(
        "acme",
        "private-infra",
        {"deploy/app.conf": f"[db]\n{SECRET}\n", CONFIG: "db_password: Hunter2\nlabel: x\n"},
        private=True,
    )
    yield fake
    fake.stop()


def load(github: FakeGitHub) -> LoadedConfig:
    settings = Settings(app_id=github.app_id, private_key=throwaway_key(), github_api_url=github.base_url)
    app = GitHubApp(settings)
    return load_repo_config(REPO, reader(app.for_repo, 7, app.for_repo(7, REPO), REPO))


def _contents_read(github: FakeGitHub, repo: str) -> list[str]:
    return [path for method, path in github.requests if method == "GET" and path.startswith(f"/repos/{repo}/contents")]


@pytest.mark.parametrize(
    ("extends", "why"),
    [
        ("private-infra:deploy/app.conf", "must name a `.yml` or `.yaml` file under `.github/`"),
        ("private-infra:.github/../deploy/app.conf", "must name a `.yml` or `.yaml` file under `.github/`"),
        ("private-infra", "names acme/private-infra; it may name only this repository, acme/.github or a public"),
    ],
)
def test_a_private_repository_of_the_installation_is_not_read(github: FakeGitHub, extends: str, why: str) -> None:
    commit_files(github, REPO, {CONFIG: f"_extends: {extends}\n"})
    with pytest.raises(ConfigError) as error:
        load(github)
    assert why in error.value.message
    assert "Hunter2" not in str(error.value) and "db_password" not in str(error.value)
    assert _contents_read(github, "acme/private-infra") == []


def test_a_public_repository_and_the_private_org_dotgithub_may_be_extended(github: FakeGitHub) -> None:
    github.add_repo("acme", ".github", {".github/base.yaml": "limits:\n  steps: 9\n"}, private=True)
    github.add_repo("acme", "shared", {CONFIG: "_extends: .github:.github/base.yaml\nlabel: shared\n"})
    commit_files(github, REPO, {CONFIG: "_extends: shared\n"})
    loaded = load(github)
    assert loaded.config.label == "shared" and loaded.config.limits.steps == 9
    assert loaded.sources[1:] == (f"acme/shared:{CONFIG}", "acme/.github:.github/base.yaml")


def test_an_error_in_another_repository_names_file_and_line_only(github: FakeGitHub) -> None:
    github.add_repo("acme", "shared", {CONFIG: f"label: ok\nsecret_key: {SECRET}\n"})
    github.add_repo("acme", "yaml-broken", {CONFIG: f"label: ok\n{SECRET}: [\n"})
    for target, expected in (("shared", "not a valid mini-fix config at line 2"), ("yaml-broken", "not valid YAML")):
        commit_files(github, REPO, {CONFIG: f"_extends: {target}\n"})
        with pytest.raises(ConfigError) as error:
            load(github)
        assert error.value.source == f"acme/{target}:{CONFIG}" and error.value.message.startswith(expected)
        assert "Hunter2" not in str(error.value) and "secret_key" not in str(error.value)
