"""Installation events: labels created where missing (paced, in the worker), dead installations get no jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from bot.github.app import GitHubApp
from bot.jobs import InstallationChange
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.settings import Settings
from bot.worker.labels import LABEL_COLOR, PACE_SECONDS, LabelKeeper
from tests.support.fake_github import FakeGitHub, throwaway_key
from tests.support.fake_github_config import commit_files
from tests.support.unpaced import unpaced
from tests.support.webhooks import example, labeled

INSTALLATION = 957387  # the id in the vendored installation examples
CONFIG = ".github/mini-fix.yml"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    for name in ("Hello-World", "Space", "Quiet"):
        fake.add_repo("Codertocat", name, {"README.md": "hi\n"})
    yield fake
    fake.stop()


def keeper(github: FakeGitHub, settings: Settings, ledger: SqliteLedger, sleeps: list[float]) -> LabelKeeper:
    update = {"app_id": github.app_id, "private_key": SecretStr(throwaway_key()), "github_api_url": github.base_url}
    app_settings = settings.model_copy(update=update)
    app = GitHubApp(app_settings, pacers=unpaced())
    return LabelKeeper(app_settings, ledger, app.for_repo, sleep=sleeps.append, clock=lambda: 0.0)


def test_created_and_added_create_the_label_only_where_missing(
    client: TestClient, deliver: Callable[..., Any], ledger: SqliteLedger, settings: Settings, github: FakeGitHub
) -> None:
    github.labels["Codertocat/Hello-World"] = [{"name": "Mini-Fix", "color": "000000", "description": ""}]
    github.add_repo("Codertocat", ".github", {CONFIG: "_extends: Hello-World:.github/base.yml\n"})
    created = example("installation", "created")
    created["repositories"].append({"full_name": "Codertocat/Quiet", "name": "Quiet"})
    assert deliver(client, "installation", created).status_code == 202
    assert (
        deliver(client, "installation_repositories", example("installation_repositories", "added")).json()["action"]
        == "installation"
    )
    assert ("POST", "/repos/Codertocat/Space/labels") not in github.requests  # nothing on the webhook path

    commit_files(github, "Codertocat/Hello-World", {".github/base.yml": "label: mini-fix\n"})
    commit_files(github, "Codertocat/Quiet", {CONFIG: "enabled: false\n"})
    sleeps: list[float] = []
    assert keeper(github, settings, ledger, sleeps).run_once() == 1

    assert github.labels["Codertocat/Hello-World"] == [{"name": "Mini-Fix", "color": "000000", "description": ""}]
    assert "Codertocat/Quiet" not in github.labels  # mini-fix is off there
    [label] = github.labels["Codertocat/Space"]
    assert label["name"] == "mini-fix" and label["color"] == LABEL_COLOR and label["description"]
    assert ledger.take_label_chore() is None


def test_label_creation_is_paced_and_uses_the_configured_name(
    ledger: SqliteLedger, settings: Settings, github: FakeGitHub
) -> None:
    github.add_repo("Codertocat", ".github", {CONFIG: "label: ai-fix\n"})
    repos = ("Codertocat/Hello-World", "Codertocat/Space", "Codertocat/Quiet")
    ledger.record_installation(InstallationChange(5, "created", "Codertocat", repos))
    sleeps: list[float] = []
    assert keeper(github, settings, ledger, sleeps).run_once() == 3
    assert sleeps == [PACE_SECONDS, PACE_SECONDS]  # a second between creations, none before the first
    assert {repo: [x["name"] for x in labels] for repo, labels in github.labels.items()} == {
        repo: ["ai-fix"] for repo in repos
    }
    assert ledger.trigger_label("Codertocat/Other", installation_id=5) == "ai-fix"  # learnt from the owner's .github


def test_a_renamed_label_triggers_once_a_worker_has_read_the_config(
    client: TestClient, deliver: Callable[..., Any], ledger: SqliteLedger
) -> None:
    repo = "Codertocat/Hello-World"
    assert deliver(client, "issues", labeled(repo, 1, sender="alice", label="ai-fix")).json()["action"] == "ignore"
    ledger.remember_label("Codertocat/*", "ai-fix", installation_id=1)
    assert deliver(client, "issues", labeled(repo, 1, sender="alice", label="ai-fix")).json()["action"] == "enqueue"
    assert deliver(client, "issues", labeled(repo, 2, sender="alice")).json()["action"] == "ignore"
    ledger.remember_label(repo, "bot-fix", installation_id=1)  # the repository's own file wins over the owner's
    answer = deliver(client, "issues", labeled(repo, 3, sender="alice", label="bot-fix")).json()
    assert answer["action"] == "enqueue" and ledger.get(answer["job_id"]).details.label == "bot-fix"  # type: ignore[union-attr]


@pytest.mark.parametrize("action", ["suspend", "deleted"])
def test_new_triggers_of_a_suspended_or_deleted_installation_are_ignored(
    client: TestClient, deliver: Callable[..., Any], ledger: SqliteLedger, action: str
) -> None:
    event = example("installation", action)
    event["installation"]["id"] = 16598467
    assert deliver(client, "installation", event).status_code == 202
    answer = deliver(client, "issues", labeled("Codertocat/Hello-World", 1, sender="alice", installation=16598467))
    assert answer.json()["action"] == "ignore" and "suspended or deleted" in answer.json()["reason"]
    assert ledger.list() == []
    if action == "suspend":
        deliver(client, "installation", {**event, "action": "unsuspend"})
        again = deliver(client, "issues", labeled("Codertocat/Hello-World", 1, sender="alice", installation=16598467))
        assert again.json()["action"] == "enqueue"
