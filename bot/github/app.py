"""GitHub through githubkit, as the App: its clients and tokens (`repo.py` is one repository's gateway, `errors.py`
githubkit's failures); only `bot/github/` imports githubkit."""

from __future__ import annotations

import functools
import ssl
from datetime import datetime
from typing import Any

import httpx
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy

from bot.github.errors import translated
from bot.github.gateway import BotIdentity, GitToken
from bot.github.pacing import Pacers
from bot.github.repo import RepoGateway
from bot.github.retry import RateLimitRetry
from bot.settings import Settings

__all__ = ["GitHubApp", "RepoGateway"]

# What a job's REST token may do; git pushes get a narrower token of their own (contents only).
JOB_PERMISSIONS: Any = {"contents": "write", "issues": "write", "pull_requests": "write", "metadata": "read"}
GIT_PERMISSIONS = {"contents": "write", "metadata": "read"}
TEAM_PERMISSIONS: Any = {"members": "read"}  # only for `allowed_teams`; jobs never ask for it otherwise
# Only for a `ci` follow-up's reads, in a token of its own: an installation that has not accepted these yet can still
# mint the job's token, and the follow-up says it could not read the failure.
CHECKS_PERMISSIONS: Any = {"checks": "read", "actions": "read", "metadata": "read"}


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, made once per process rather than per GitHubApp: loading the CA bundle
    takes ~20 ms of CPU each time (the unit tests make an App per job). A context is safe to share."""
    return httpx.create_ssl_context()


class _SharedTransport(httpx.HTTPTransport):
    """One connection pool for all of the App's clients; githubkit closes its per-request client, not this."""

    def close(self) -> None:
        """Keep the pool: other requests (other threads) are using it. It ends with the process."""


class GitHubApp:
    """The App: makes per-repository gateways and knows its own bot identity. One per worker process."""

    def __init__(self, settings: Settings, *, pacers: Pacers | None = None) -> None:
        self._base_url = settings.github_api_url
        self._auth = AppAuthStrategy(str(settings.app_id), settings.require_private_key())
        # One token cache per App object: githubkit's default is process-wide and its keys omit the URL.
        self._cache = MemCacheStrategy()
        # githubkit builds an httpx client per request outside `with`: with its own transport that meant a new TLS
        # context (~10-40 ms of CPU here) and a new connection per call. One shared, thread-safe pool instead.
        self._transport = _SharedTransport(verify=_tls_context())
        self._retry = RateLimitRetry()  # githubkit's own retry loop, waiting out rate limits within a bound
        self._pacers = pacers or Pacers()  # one installation's writes one at a time; content a second apart
        self._app = self._client(self._auth)
        self._identity: BotIdentity | None = None

    def _client(self, auth: Any) -> GitHub[Any]:
        return GitHub(
            auth,
            base_url=self._base_url,
            cache_strategy=self._cache,
            http_cache=False,
            auto_retry=self._retry,
            transport=self._transport,
        )

    def for_repo(self, installation_id: int, repo: str) -> RepoGateway:
        """A gateway for one repository (`owner/name`) with a token narrowed to it."""
        owner, name = repo.split("/", 1)
        auth = self._auth.as_installation(installation_id, repositories=[name], permissions=JOB_PERMISSIONS)
        client = self._client(auth)
        mint, identity = (lambda: self.mint_token(installation_id, name)), (lambda: self.bot_identity(client))
        teams = lambda: self._client(self._auth.as_installation(installation_id, permissions=TEAM_PERMISSIONS))  # noqa: E731
        narrow = self._auth.as_installation(installation_id, repositories=[name], permissions=CHECKS_PERMISSIONS)
        checks = lambda: self._client(narrow)  # noqa: E731
        return RepoGateway(
            client, owner, name, mint, identity, teams=teams, checks=checks, pacer=self._pacers.of(installation_id)
        )

    def drain(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) for the writes nobody waited for (reactions, the trajectory comment) to be
        sent; True when none is left. The worker's shutdown calls it."""
        return self._pacers.drain(timeout)

    def mint_token(self, installation_id: int, name: str) -> GitToken:
        """A new installation token for git, outside githubkit's cache, narrowed to one repository."""
        body = {"repositories": [name], "permissions": GIT_PERMISSIONS}
        with translated("minting an installation token"):
            resp = self._app.request("POST", f"/app/installations/{installation_id}/access_tokens", json=body)
        data = resp.json()
        return GitToken(str(data["token"]), _expiry(data.get("expires_at")))

    def bot_identity(self, installation: GitHub[Any]) -> BotIdentity:
        """`<slug>[bot]` and its noreply email, looked up once (/users needs an installation token)."""
        if self._identity is None:
            with translated("reading the App's identity"):
                slug = str(self._app.request("GET", "/app").json()["slug"])
                login = f"{slug}[bot]"
                user_id = installation.request("GET", f"/users/{login}").json()["id"]
            self._identity = BotIdentity(login, f"{user_id}+{login}@users.noreply.github.com")
        return self._identity


def _expiry(stamp: Any) -> float:
    """`expires_at` as epoch seconds; 0 (already expired: mint again at the next use) when absent or unreadable."""
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
