"""GitHub through githubkit, as the App's installation: the only module that imports githubkit."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.exception import GitHubException, RequestError, RequestFailed

from bot.github.gateway import BotIdentity, Comment, GitHubError, Issue, PullRequest, RepoInfo
from bot.settings import Settings

# What a job's REST token may do; git pushes get a narrower token of their own (contents only).
JOB_PERMISSIONS: Any = {"contents": "write", "issues": "write", "pull_requests": "write", "metadata": "read"}
GIT_PERMISSIONS = {"contents": "write", "metadata": "read"}
TEAM_PERMISSIONS: Any = {"members": "read"}  # only for `allowed_teams`; jobs never ask for it otherwise
KNOWN_ROLES = ("admin", "maintain", "write", "triage", "read")
DRAFT_UNSUPPORTED = "draft pull requests are not supported"


@contextmanager
def _translated(what: str) -> Iterator[None]:
    """Turn githubkit's failures into a GitHubError that is safe to log."""
    try:
        yield
    except RequestFailed as exc:
        raise GitHubError(f"{what}: HTTP {exc.response.status_code} {_message(exc)}") from exc
    except RequestError as exc:  # also wraps failures while minting an installation token
        origin = exc.exc
        if isinstance(origin, RequestFailed):
            raise GitHubError(f"{what}: HTTP {origin.response.status_code} {_message(origin)}") from exc
        raise GitHubError(f"{what}: {type(origin).__name__}") from exc
    except GitHubException as exc:
        raise GitHubError(f"{what}: {type(exc).__name__}: {exc}") from exc


def _message(exc: RequestFailed) -> str:
    try:
        data = exc.response.raw_response.json()
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    details = [str(e.get("message", "")) for e in data.get("errors") or [] if isinstance(e, dict)]
    return "; ".join(m for m in [str(data.get("message", "")), *details] if m)


def status_of(exc: GitHubError) -> int | None:
    """The HTTP status behind a GitHubError (also one raised while minting its token), if any."""
    cause = exc.__cause__
    if isinstance(cause, RequestError) and isinstance(cause.exc, RequestFailed):
        cause = cause.exc
    return cause.response.status_code if isinstance(cause, RequestFailed) else None


def role_of(data: dict[str, Any]) -> str:
    """The precise role from a collaborator-permission answer; legacy `permission` says write for maintain."""
    role = str(data.get("role_name") or "")
    if role in KNOWN_ROLES:
        return role
    # A custom role: its base shows only through the legacy field.
    legacy = str(data.get("permission") or "none")
    return legacy if legacy in KNOWN_ROLES else "none"


def _pull(data: dict[str, Any]) -> PullRequest:
    return PullRequest(
        number=int(data["number"]),
        url=str(data.get("html_url") or ""),
        body=str(data.get("body") or ""),
        draft=bool(data.get("draft", False)),
        head=str((data.get("head") or {}).get("ref", "")),
    )


def _comment(data: dict[str, Any], body: str) -> Comment:
    login = str((data.get("user") or {}).get("login", ""))
    return Comment(int(data["id"]), login, body, str(data.get("created_at") or ""))


def _review_body(data: dict[str, Any]) -> str:
    line = data.get("line") or data.get("original_line") or "?"
    return f"On `{data.get('path', '')}` line {line}:\n{data.get('body') or ''}"


class _SharedTransport(httpx.HTTPTransport):
    """One connection pool for all of the App's clients; githubkit closes its per-request client, not this."""

    def close(self) -> None:
        """Keep the pool: other requests (other threads) are using it. It ends with the process."""


class GitHubApp:
    """The App: makes per-repository gateways and knows its own bot identity. One per worker process."""

    def __init__(self, settings: Settings) -> None:
        self._base_url = settings.github_api_url
        self._auth = AppAuthStrategy(str(settings.app_id), settings.require_private_key())
        # One token cache per App object: githubkit's default is process-wide and its keys omit the URL.
        self._cache = MemCacheStrategy()
        # githubkit builds an httpx client per request outside `with`: with its own transport that meant a new TLS
        # context (~10-40 ms of CPU here) and a new connection per call. One shared, thread-safe pool instead.
        self._transport = _SharedTransport()
        self._app = self._client(self._auth)
        self._identity: BotIdentity | None = None

    def _client(self, auth: Any) -> GitHub[Any]:
        return GitHub(
            auth,
            base_url=self._base_url,
            cache_strategy=self._cache,
            http_cache=False,
            auto_retry=True,
            transport=self._transport,
        )

    def for_repo(self, installation_id: int, repo: str) -> RepoGateway:
        """A gateway for one repository (`owner/name`) with a token narrowed to it."""
        owner, name = repo.split("/", 1)
        auth = self._auth.as_installation(installation_id, repositories=[name], permissions=JOB_PERMISSIONS)
        client = self._client(auth)
        mint, identity = (lambda: self.mint_token(installation_id, name)), (lambda: self.bot_identity(client))
        teams = lambda: self._client(self._auth.as_installation(installation_id, permissions=TEAM_PERMISSIONS))  # noqa: E731
        return RepoGateway(client, owner, name, mint, identity, teams=teams)

    def mint_token(self, installation_id: int, name: str) -> str:
        """A new installation token for git, outside githubkit's cache, narrowed to one repository."""
        body = {"repositories": [name], "permissions": GIT_PERMISSIONS}
        with _translated("minting an installation token"):
            resp = self._app.request("POST", f"/app/installations/{installation_id}/access_tokens", json=body)
        return str(resp.json()["token"])

    def bot_identity(self, installation: GitHub[Any]) -> BotIdentity:
        """`<slug>[bot]` and its noreply email, looked up once (/users needs an installation token)."""
        if self._identity is None:
            with _translated("reading the App's identity"):
                slug = str(self._app.request("GET", "/app").json()["slug"])
                login = f"{slug}[bot]"
                user_id = installation.request("GET", f"/users/{login}").json()["id"]
            self._identity = BotIdentity(login, f"{user_id}+{login}@users.noreply.github.com")
        return self._identity


class RepoGateway:
    """GitHubGateway for one repository, authenticated as the installation."""

    def __init__(
        self,
        github: GitHub[Any],
        owner: str,
        name: str,
        mint: Callable[[], str],
        identity: Callable[[], BotIdentity],
        *,
        teams: Callable[[], GitHub[Any]] | None = None,
    ) -> None:
        self._gh = github  # keep the GitHub object alive: its REST namespace does not hold it
        self._teams = teams or (lambda: github)
        self.owner, self.name = owner, name
        self._mint, self._identity = mint, identity
        self._prefix = f"/repos/{owner}/{name}"

    def _json(self, what: str, method: str, path: str, **kwargs: Any) -> Any:
        with _translated(what):
            resp = self._gh.request(method, self._prefix + path, **kwargs)
        return resp.json() if resp.raw_response.content else None

    def permission(self, user: str) -> str:
        """The user's role: admin, maintain, write, triage, read or none."""
        try:
            data = self._json("reading a permission", "GET", f"/collaborators/{user}/permission")
        except GitHubError as exc:
            if isinstance(exc.__cause__, RequestFailed) and exc.__cause__.response.status_code == 404:
                return "none"
            raise
        return role_of(data)

    def get_issue(self, number: int) -> Issue:
        """One issue."""
        d = self._json("reading the issue", "GET", f"/issues/{number}")
        return Issue(
            int(d["number"]),
            str(d.get("title") or ""),
            str(d.get("body") or ""),
            str((d.get("user") or {}).get("login", "")),
            str(d.get("state", "open")),
            "pull_request" in d,
        )

    def list_comments(self, number: int) -> list[Comment]:
        """All comments on the issue, oldest first."""
        return [
            _comment(c, str(c.get("body") or "")) for c in self._pages("listing comments", f"/issues/{number}/comments")
        ]

    def list_review_comments(self, number: int) -> list[Comment]:
        """All review comments on the PR's diff, oldest first, each body prefixed with its file and line."""
        found = self._pages("listing review comments", f"/pulls/{number}/comments")
        return [_comment(c, _review_body(c)) for c in found]

    def _pages(self, what: str, path: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = self._json(what, "GET", path, params={"per_page": 100, "page": page})
            items += batch
            if len(batch) < 100:
                return items
            page += 1

    def add_reaction(self, number: int, content: str, *, comment_id: int | None = None) -> None:
        """React to the issue, or to one of its comments."""
        path = f"/issues/comments/{comment_id}/reactions" if comment_id else f"/issues/{number}/reactions"
        self._json("adding a reaction", "POST", path, json={"content": content})

    def create_comment(self, number: int, body: str) -> int:
        """Post a comment; return its id."""
        data = self._json("posting a comment", "POST", f"/issues/{number}/comments", json={"body": body})
        return int(data["id"])

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace a comment's body."""
        self._json("editing a comment", "PATCH", f"/issues/comments/{comment_id}", json={"body": body})

    def get_repo(self) -> RepoInfo:
        """Default branch, clone URL, visibility."""
        d = self._json("reading the repository", "GET", "")
        return RepoInfo(str(d["full_name"]), str(d["default_branch"]), str(d["clone_url"]), bool(d["private"]))

    def find_open_pr(self, branch: str) -> PullRequest | None:
        """The open PR from `<owner>:<branch>` (GitHub ignores a head filter without the owner)."""
        params = {"head": f"{self.owner}:{branch}", "state": "open"}
        found = self._json("looking for the PR", "GET", "/pulls", params=params)
        return _pull(found[0]) if found else None

    def create_pr(self, *, title: str, body: str, head: str, base: str) -> PullRequest:
        """Open a draft PR, or a ready one where the plan has no drafts."""
        payload = {"title": title, "body": body, "head": head, "base": base, "draft": True}
        try:
            return _pull(self._json("opening the PR", "POST", "/pulls", json=payload))
        except GitHubError as exc:
            if DRAFT_UNSUPPORTED not in str(exc).lower():
                raise
        return _pull(self._json("opening the PR", "POST", "/pulls", json={**payload, "draft": False}))

    def update_pr(self, number: int, *, title: str, body: str) -> None:
        """Replace the PR's title and body."""
        self._json("updating the PR", "PATCH", f"/pulls/{number}", json={"title": title, "body": body})

    def get_pr(self, number: int) -> PullRequest:
        """One pull request."""
        return _pull(self._json("reading the PR", "GET", f"/pulls/{number}"))

    def git_token(self) -> str:
        """A fresh token for git, narrowed to this repository."""
        return self._mint()

    def bot_identity(self) -> BotIdentity:
        """The App's bot user."""
        return self._identity()

    def read_file(self, path: str) -> str | None:
        """A file's text on the default branch (no `ref`); None when it or the repository is out of reach."""
        try:
            data = self._json("reading a file", "GET", f"/contents/{path}")
        except GitHubError as exc:
            if status_of(exc) in (404, 422):  # 422: this installation cannot mint a token for the repository
                return None
            raise
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        return base64.b64decode(str(data.get("content") or "")).decode("utf-8", "replace")

    def list_labels(self) -> list[str]:
        """The names of the repository's labels (every page)."""
        return [str(label["name"]) for label in self._pages("listing labels", "/labels")]

    def create_label(self, name: str, color: str, description: str) -> None:
        """Create a label; a 422 (`already_exists`: someone made it meanwhile) is not an error."""
        body = {"name": name, "color": color, "description": description}
        try:
            self._json("creating a label", "POST", "/labels", json=body)
        except GitHubError as exc:
            if status_of(exc) != 422:
                raise

    def team_member(self, team: str, user: str) -> bool:
        """Whether `user` is an active member of the owner organisation's team `team`."""
        client = self._teams()
        try:
            with _translated("reading a team membership"):
                resp = client.request("GET", f"/orgs/{self.owner}/teams/{team}/memberships/{user}")
        except GitHubError as exc:
            if status_of(exc) == 404:
                return False
            raise
        return bool(resp.json().get("state") == "active")
