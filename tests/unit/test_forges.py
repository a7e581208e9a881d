"""A deployment serves GitHub, GitLab or both: which forges the settings configure, the errors of a half-configured
one, a GitLab-only app, worker routing, preflight and the run links' key."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from bot.cli.main import main
from bot.github.gateway import GitHubError
from bot.gitlab.routing import by_forge
from bot.jobs import JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.preflight import problems
from bot.queue.dispatch import JobQueue
from bot.settings import Settings, SettingsError
from bot.signing import check_link, run_signature, signed_run_url
from bot.web.app import create_app
from tests.support.fake_github import throwaway_key
from tests.support.gitlab_hooks import SECRET as GITLAB_SECRET
from tests.support.gitlab_hooks import body, headers, labeled

GITHUB_SECRET = "a-real-github-secret-1234"
KEY = throwaway_key()


def github(**extra: Any) -> dict[str, Any]:
    return {"app_id": 7, "private_key": SecretStr(KEY), "webhook_secret": SecretStr(GITHUB_SECRET), **extra}


def gitlab(**extra: Any) -> dict[str, Any]:
    return {
        "gitlab_url": "https://gitlab.example.org",
        "gitlab_token": SecretStr("glpat-bot-token-123"),
        "gitlab_webhook_secret": SecretStr(GITLAB_SECRET),
        **extra,
    }


def settings(tmp_path: Path | None = None, **values: Any) -> Settings:
    where = {"data_dir": tmp_path} if tmp_path is not None else {}
    return Settings(**values, **where, _env_file=None)


@pytest.mark.parametrize(
    ("values", "served"),
    [(github(), ("github",)), (gitlab(), ("gitlab",)), ({**github(), **gitlab()}, ("github", "gitlab"))],
)
def test_each_whole_forge_is_served(values: dict[str, Any], served: tuple[str, ...]) -> None:
    assert settings(**values).forges() == served


@pytest.mark.parametrize(
    ("values", "named", "not_named"),
    [
        ({"app_id": 7}, ["MINIFIX_PRIVATE_KEY", "MINIFIX_WEBHOOK_SECRET"], ["MINIFIX_APP_ID"]),
        ({"webhook_secret": SecretStr(GITHUB_SECRET)}, ["MINIFIX_APP_ID", "MINIFIX_PRIVATE_KEY"], ["GITLAB"]),
        (gitlab(gitlab_token=None), ["GitLab is half-configured", "MINIFIX_GITLAB_TOKEN"], ["MINIFIX_GITLAB_URL"]),
        ({"gitlab_url": "https://gitlab.example.org"}, ["MINIFIX_GITLAB_TOKEN", "MINIFIX_GITLAB_WEBHOOK_SECRET"], []),
        (gitlab(**github(app_id=None)), ["GitHub is half-configured", "MINIFIX_APP_ID"], ["MINIFIX_GITLAB_TOKEN"]),
        (gitlab(gitlab_webhook_secret=SecretStr("changeme")), ["MINIFIX_GITLAB_WEBHOOK_SECRET", "placeholder"], []),
    ],
)
def test_a_half_configured_forge_names_what_it_lacks(
    values: dict[str, Any], named: list[str], not_named: list[str]
) -> None:
    with pytest.raises(SettingsError) as raised:
        settings(**values).forges()
    assert all(name in str(raised.value) for name in named), str(raised.value)
    assert not any(name in str(raised.value) for name in not_named), str(raised.value)


def test_neither_forge_names_both_and_keeps_the_setup_hint() -> None:
    with pytest.raises(SettingsError) as raised:
        settings().forges()
    message = str(raised.value)
    assert "MINIFIX_APP_ID" in message and "MINIFIX_GITLAB_URL" in message and "mini-fix setup" in message


def test_a_web_process_without_a_worker_needs_only_the_webhook_secrets() -> None:
    assert settings(webhook_secret=SecretStr(GITHUB_SECRET)).forges(webhooks_only=True) == ("github",)
    only_hooks = settings(gitlab_url="https://gitlab.example.org", gitlab_webhook_secret=SecretStr(GITLAB_SECRET))
    assert only_hooks.forges(webhooks_only=True) == ("gitlab",)
    with pytest.raises(SettingsError, match="MINIFIX_WEBHOOK_SECRET"):
        settings(app_id=7).forges(webhooks_only=True)


def test_a_gitlab_only_app_answers_404_on_githubs_route_and_records_a_gitlab_delivery(
    tmp_path: Path, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    only = settings(tmp_path, **gitlab(), label="mini-fix")
    with TestClient(create_app(only, ledger=ledger, queue=job_queue)) as client:
        refused = client.post("/webhook", content=b"{}", headers={"X-GitHub-Event": "ping"})
        probot = client.post("/api/github/webhooks", content=b"{}")
        payload = labeled("acme/widgets", 5)
        taken = client.post("/webhook/gitlab", content=body(payload), headers=headers(payload))
    assert refused.status_code == probot.status_code == 404
    assert "GitHub is not configured" in refused.json()["error"] and "/webhook/gitlab" in refused.json()["hint"]
    assert taken.status_code == 202, taken.text
    [job] = ledger.list()
    assert job.installation_id < 0 and job.status == JobStatus.QUEUED


def test_an_app_with_neither_forge_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="MINIFIX_GITLAB_WEBHOOK_SECRET"):
        create_app(settings(tmp_path))


def test_a_github_job_on_a_gitlab_only_worker_fails_with_a_clear_error() -> None:
    def gitlab_gateway(installation_id: int, repo: str) -> Any:
        return ("gitlab", installation_id, repo)

    route = by_forge(None, gitlab_gateway)
    assert route(-5, "acme/widgets") == ("gitlab", -5, "acme/widgets")
    with pytest.raises(GitHubError, match="serves GitLab only"):
        route(42, "octo/repo")


def test_preflight_passes_a_gitlab_only_deployment_and_names_its_gaps() -> None:
    model = {"model_api_base": "http://localhost:8000/v1"}
    assert problems(settings(**gitlab(), **model)) == []
    gaps = problems(settings(**gitlab(gitlab_token=None), **model))
    assert len(gaps) == 1 and "MINIFIX_GITLAB_TOKEN" in gaps[0]


def test_serve_stops_at_once_on_a_half_configured_gitlab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    for name in [n for n in os.environ if n.startswith("MINIFIX_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MINIFIX_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MINIFIX_GITLAB_URL", "https://gitlab.example.org")
    monkeypatch.setenv("MINIFIX_GITLAB_WEBHOOK_SECRET", GITLAB_SECRET)
    # structlog would keep writing to this test's captured stream after it closes: other tests' logs would fail
    monkeypatch.setattr("bot.logs.configure_logging", lambda *_args, **_kwargs: None)
    assert main(["serve"]) == 2
    assert "MINIFIX_GITLAB_TOKEN" in capsys.readouterr().err


def test_github_link_key_is_unchanged_and_a_gitlab_only_deployment_signs_with_gitlabs_secret() -> None:
    key = hmac.new(GITHUB_SECRET.encode(), b"mini-fix run links v1", hashlib.sha256).digest()
    expected = hmac.new(key, b"v2:run1:2000000000", hashlib.sha256).hexdigest()[:32]
    for values in (github(), {**github(), **gitlab()}):  # GitHub's key, with or without GitLab beside it
        assert run_signature(settings(**values), "run1", 2_000_000_000) == expected
    only = settings(**gitlab(), public_url="https://fix.example.org")
    url = signed_run_url(only, "run1")
    assert url is not None and url.startswith("https://fix.example.org/runs/run1?")
    query = dict(part.split("=", 1) for part in url.split("?", 1)[1].split("&"))
    assert check_link(only, "run1", query, started=lambda: None)
    gl_key = hmac.new(GITLAB_SECRET.encode(), b"mini-fix run links v1", hashlib.sha256).digest()
    assert query["sig"] == hmac.new(gl_key, f"v2:run1:{query['exp']}".encode(), hashlib.sha256).hexdigest()[:32]
    assert not check_link(settings(**github()), "run1", query, started=lambda: None)
