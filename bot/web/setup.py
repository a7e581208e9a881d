"""`mini-fix setup`: register the GitHub App from `app.yml` with GitHub's manifest flow, and save its credentials.

A page on 127.0.0.1 posts the manifest to GitHub; GitHub sends the browser back with a one-time `code`, which is
exchanged (`POST /app-manifests/{code}/conversions`) for the App's id, private key and webhook secret.
"""

from __future__ import annotations

import html
import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import yaml

from bot.github.urls import web_url
from bot.render import PROMPTS_DIR
from bot.settings import Settings
from bot.web.gitignored import unignored_in_work_tree

APP_YML = Path(__file__).resolve().parents[2] / "app.yml"
ENV_KEYS = (
    "MINIFIX_APP_ID",
    "MINIFIX_PRIVATE_KEY",
    "MINIFIX_PRIVATE_KEY_PATH",
    "MINIFIX_WEBHOOK_SECRET",
    "MINIFIX_GITHUB_API_URL",
    "MINIFIX_PUBLIC_URL",
)
DEFAULT_API_URL = "https://api.github.com"


class SetupError(Exception):
    """The manifest flow could not finish; the message says what to do."""


def new_app_url(web: str, org: str | None, state: str) -> str:
    """Where the manifest is posted: the user's or an organisation's new-App page."""
    owner = f"/organizations/{org}" if org else ""
    return f"{web}{owner}/settings/apps/new?state={state}"


def manifest(app_yml: Path, redirect_url: str, public_url: str | None) -> dict[str, Any]:
    """app.yml as a manifest, redirecting back to us and sending webhooks to MINIFIX_PUBLIC_URL when set."""
    data: dict[str, Any] = yaml.safe_load(app_yml.read_text())
    data["redirect_url"] = redirect_url
    if public_url:
        data["hook_attributes"] = {**data.get("hook_attributes", {}), "url": public_url.rstrip("/") + "/webhook"}
    return data


def convert(api_url: str, code: str, client: httpx.Client | None = None) -> dict[str, Any]:
    """Exchange the redirect's one-time code for the new App's credentials."""
    http = client or httpx.Client(timeout=30)
    try:
        resp = http.post(f"{api_url.rstrip('/')}/app-manifests/{code}/conversions")
    except httpx.HTTPError as exc:
        raise SetupError(f"could not reach {api_url}: {exc}") from exc
    finally:
        if client is None:
            http.close()
    if resp.status_code != 201:
        raise SetupError(f"GitHub refused the code (HTTP {resp.status_code}): start `mini-fix setup` again")
    data: dict[str, Any] = resp.json()
    return data


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through os.open


def key_path(env_file: Path, slug: str) -> Path:
    """Where the App's private key is written: next to the env file."""
    return env_file.resolve().parent / f"{slug}.private-key.pem"


def refuse_committable(*paths: Path) -> None:
    """SetupError when a file about to hold a secret lies in a git work tree that does not ignore it."""
    for path in paths:
        if (top := unignored_in_work_tree(path)) is not None:
            raise SetupError(
                f"{path} is inside the git work tree {top} and not ignored: a secret written there could be "
                f"committed. Add it to {top / '.gitignore'} (e.g. `*.pem` and `.env`) or pass --env-file elsewhere"
            )


def passed_settings(settings: Settings) -> list[str]:
    """The settings the user gave that the App needs again later (GitHub Enterprise's API, the public URL)."""
    lines = []
    if settings.github_api_url.rstrip("/") != DEFAULT_API_URL:
        lines.append(f"MINIFIX_GITHUB_API_URL={settings.github_api_url}")
    if settings.public_url:
        lines.append(f"MINIFIX_PUBLIC_URL={settings.public_url}")
    return lines


def save_credentials(app: dict[str, Any], env_file: Path, extra: list[str] | None = None) -> Path:
    """Write the private key next to `env_file` and the App's settings (and `extra`) into it (both 0600)."""
    key = key_path(env_file, str(app["slug"]))
    refuse_committable(key, env_file)
    _write_private(key, str(app["pem"]))
    kept = env_file.read_text().splitlines() if env_file.exists() else []
    kept = [line for line in kept if line.split("=", 1)[0].strip() not in ENV_KEYS]
    lines = [
        *kept,
        f"MINIFIX_APP_ID={app['id']}",
        f"MINIFIX_PRIVATE_KEY_PATH={key}",
        f"MINIFIX_WEBHOOK_SECRET={app['webhook_secret']}",
        *(extra or []),
    ]
    _write_private(env_file, "\n".join(lines) + "\n")
    return key


def install_url(app: dict[str, Any]) -> str:
    """Where to install the new App on repositories."""
    return f"{str(app['html_url']).rstrip('/')}/installations/new"


@dataclass
class SetupFlow:
    """One run of the manifest flow: the page to show, then the callback that saves the credentials."""

    settings: Settings
    redirect_url: str
    env_file: Path
    org: str | None = None
    client: httpx.Client | None = None
    state: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    result: dict[str, Any] | None = None

    def check_files(self) -> None:
        """Before GitHub creates anything: refuse an env file or key path that git would commit."""
        name = str(yaml.safe_load(APP_YML.read_text()).get("name", "mini-fix")).lower().replace(" ", "-")
        refuse_committable(key_path(self.env_file, name), self.env_file)

    def page(self) -> str:
        """The HTML page whose form posts the manifest to GitHub."""
        data = manifest(APP_YML, self.redirect_url, self.settings.public_url)
        action = new_app_url(web_url(self.settings.github_api_url), self.org, self.state)
        template = (PROMPTS_DIR / "setup.html").read_text()
        values = {"action": action, "manifest": json.dumps(data), "name": str(data.get("name", "mini-fix"))}
        for key, value in values.items():
            template = template.replace("{{ " + key + " }}", html.escape(value, quote=True))
        return template

    def complete(self, code: str, state: str) -> dict[str, Any]:
        """Check the state, exchange the code, save the credentials; returns the App GitHub created."""
        if not secrets.compare_digest(state, self.state):
            raise SetupError("the callback's state does not match this setup: start `mini-fix setup` again")
        app = convert(self.settings.github_api_url, code, self.client)
        save_credentials(app, self.env_file, passed_settings(self.settings))
        self.result = app
        return app


def serve(flow: SetupFlow, port: int) -> tuple[ThreadingHTTPServer, threading.Event]:
    """Serve the flow on 127.0.0.1:port in a thread; the event is set once the credentials are saved."""
    done = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/":
                return self._reply(200, flow.page())
            if url.path != "/callback":
                return self._reply(404, "not found")
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            try:
                app = flow.complete(query.get("code", ""), query.get("state", ""))
            except SetupError as exc:
                return self._reply(400, html.escape(str(exc)))
            done.set()
            link = html.escape(install_url(app), quote=True)
            self._reply(200, f'<p>Saved. Now <a href="{link}">install the App</a>; you can close this tab.</p>')

        def _reply(self, status: int, body: str) -> None:
            raw = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, done
