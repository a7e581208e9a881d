"""`mini-fix setup`: the manifest page, the code exchange against a fake conversion endpoint, the saved files."""

from __future__ import annotations

import html
import json
import re
import stat
import urllib.request
from pathlib import Path

import httpx
import pytest
import respx
from fastapi.testclient import TestClient

from bot.settings import Settings
from bot.web.app import create_app
from bot.web.setup import SetupError, SetupFlow, serve, web_url
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
