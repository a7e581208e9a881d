"""`mini-fix setup`: the manifest page, the code exchange against a fake conversion endpoint, the saved files."""

from __future__ import annotations

import html
import json
import re
import stat
import subprocess
import urllib.request
from pathlib import Path

import httpx
import pytest
import respx
from fastapi.testclient import TestClient

from bot.cli.main import _parser
from bot.settings import Settings
from bot.web.app import create_app
from bot.web.setup import SetupError, SetupFlow, passed_settings, serve, web_url
from tests.support.fake_github import throwaway_key

API = "https://ghe.example.com/api/v3"
CONVERSION = {
    "id": 4242,
    "slug": "mini-fix-acme",
    "html_url": "https://ghe.example.com/apps/mini-fix-acme",
    "pem": throwaway_key(),
    "webhook_secret": "5f3c0d1e2a9b8c7d6e5f4a3b2c1d0e9f",
    "client_id": "Iv1.abc",
}


def test_web_url_from_the_api_url() -> None:
    assert web_url("https://api.github.com") == "https://github.com"
    assert web_url("https://ghe.example.com/api/v3/") == "https://ghe.example.com"


def test_the_page_posts_the_app_yml_manifest_to_the_org_new_app_page(tmp_path: Path) -> None:
    settings = Settings(github_api_url=API, public_url="https://bot.acme.dev/", _env_file=None)
    flow = SetupFlow(settings, "http://127.0.0.1:3333/callback", tmp_path / ".env", org="acme")
    page = flow.page()
    action = re.search(r'action="([^"]+)"', page)
    assert action and html.unescape(action.group(1)) == (
        f"https://ghe.example.com/organizations/acme/settings/apps/new?state={flow.state}"
    )
    value = re.search(r'name="manifest" value="([^"]+)"', page)
    assert value
    manifest = json.loads(html.unescape(value.group(1)))
    assert manifest["redirect_url"] == "http://127.0.0.1:3333/callback"
    assert manifest["hook_attributes"]["url"] == "https://bot.acme.dev/webhook"
    assert manifest["default_permissions"]["contents"] == "write" and "issues" in manifest["default_events"]


def test_the_callback_saves_0600_files_that_the_app_then_starts_with(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("MINIFIX_MODEL=hosted_vllm/x\nMINIFIX_WEBHOOK_SECRET=old\n")
    settings = Settings(github_api_url=API, _env_file=None)
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(f"{API}/app-manifests/one-time-code/conversions").respond(201, json=CONVERSION)
        flow = SetupFlow(settings, "http://127.0.0.1:0/callback", env_file, client=httpx.Client())
        server, done = serve(flow, 0)
        port = server.server_address[1]
        try:
            url = f"http://127.0.0.1:{port}/callback?code=one-time-code&state={flow.state}"
            with urllib.request.urlopen(url) as reply:  # the browser coming back from GitHub (not httpx: not mocked)
                body = reply.read().decode()
        finally:
            server.shutdown()
    assert route.call_count == 1 and done.is_set()
    assert "https://ghe.example.com/apps/mini-fix-acme/installations/new" in body
    key = tmp_path / "mini-fix-acme.private-key.pem"
    for path in (env_file, key):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert key.read_text() == CONVERSION["pem"]
    lines = env_file.read_text().splitlines()
    assert "MINIFIX_MODEL=hosted_vllm/x" in lines and "MINIFIX_WEBHOOK_SECRET=old" not in lines

    loaded = Settings(_env_file=env_file, data_dir=tmp_path / "data")
    assert loaded.app_id == 4242 and loaded.require_private_key() == CONVERSION["pem"]
    assert loaded.require_webhook_secret() == CONVERSION["webhook_secret"]
    with TestClient(create_app(loaded)) as client:
        assert client.get("/healthz").json()["ok"] is True


def test_a_wrong_state_or_a_refused_code_saves_nothing(tmp_path: Path) -> None:
    settings = Settings(github_api_url=API, _env_file=None)
    flow = SetupFlow(settings, "http://127.0.0.1:0/callback", tmp_path / ".env", client=httpx.Client())
    with pytest.raises(SetupError, match="state"):
        flow.complete("code", "forged")
    with respx.mock() as mock:
        mock.post(f"{API}/app-manifests/stale/conversions").respond(404, json={"message": "Not Found"})
        with pytest.raises(SetupError, match="HTTP 404"):
            flow.complete("stale", flow.state)
    assert list(tmp_path.iterdir()) == []


def _work_tree(path: Path, ignore: str | None) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if ignore is not None:
        (path / ".gitignore").write_text(ignore)
    return path


def test_setup_refuses_to_write_secrets_git_would_commit(tmp_path: Path) -> None:
    repo = _work_tree(tmp_path / "repo", ignore=None)
    flow = SetupFlow(Settings(github_api_url=API, _env_file=None), "http://127.0.0.1:0/callback", repo / ".env")
    with pytest.raises(SetupError, match=r"inside the git work tree .* not ignored"):
        flow.check_files()
    with respx.mock() as mock:  # the same refusal stands when the callback comes: nothing is written
        mock.post(f"{API}/app-manifests/code/conversions").respond(201, json=CONVERSION)
        flow.client = httpx.Client()
        with pytest.raises(SetupError, match="not ignored"):
            flow.complete("code", flow.state)
    assert sorted(p.name for p in repo.iterdir()) == [".git"]
    (repo / ".gitignore").write_text(".env\n")  # the env file ignored, the key not: still refused
    with pytest.raises(SetupError, match=r"mini-fix\.private-key\.pem"):
        flow.check_files()


def test_setup_in_an_ignoring_work_tree_saves_the_settings_the_user_passed(tmp_path: Path) -> None:
    repo = _work_tree(tmp_path / "repo", ignore=".env\n*.pem\n")
    settings = Settings(github_api_url=API, public_url="https://bot.acme.dev", _env_file=None)
    flow = SetupFlow(settings, "http://127.0.0.1:0/callback", repo / ".env", client=httpx.Client())
    flow.check_files()
    with respx.mock() as mock:
        mock.post(f"{API}/app-manifests/code/conversions").respond(201, json=CONVERSION)
        flow.complete("code", flow.state)
    lines = (repo / ".env").read_text().splitlines()
    assert f"MINIFIX_GITHUB_API_URL={API}" in lines and "MINIFIX_PUBLIC_URL=https://bot.acme.dev" in lines
    loaded = Settings(_env_file=repo / ".env")
    assert loaded.github_api_url == API and loaded.public_url == "https://bot.acme.dev"


def test_setup_leaves_the_default_api_url_out_and_its_help_names_both_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert passed_settings(Settings(_env_file=None)) == []
    with pytest.raises(SystemExit):
        _parser().parse_args(["setup", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "MINIFIX_GITHUB_API_URL" in text and "MINIFIX_PUBLIC_URL" in text and "ignored by git" in text


def test_the_repositorys_gitignore_covers_every_secret_file_the_project_writes() -> None:
    root = Path(__file__).resolve().parents[2]
    paths = [".env", "deploy/.env", "mini-fix.private-key.pem", "deploy/github-app.private-key.pem", "x/.env.local"]
    result = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=root, capture_output=True, text=True)
    assert result.stdout.split() == paths
    example = subprocess.run(["git", "check-ignore", "--no-index", "-q", "deploy/.env.example"], cwd=root)
    assert example.returncode == 1  # the example is committed
