"""The HTTP side of FakeGitHub: REST routes over its state, and git smart HTTP through `git http-backend`."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.fake_github_checks import ROUTES as checks_routes
from tests.support.fake_github_config import ROUTES as config_routes
from tests.support.fake_github_faults import GIT_PATH

Reply = tuple[int, Any]
REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
LEGACY = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}
BOT_ID = 4242


class GitHubHandler(BaseHTTPRequestHandler):
    """One request; `github` is the FakeGitHub it serves (set on a subclass by FakeGitHub.start)."""

    github: Any

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        is_git = re.match(GIT_PATH, url.path) is not None
        if fault := self.github.faults.take(method, url.path):  # injected failures (fake_github_faults.py)
            self._body()  # read, so the client sees the answer and not a reset connection
            if is_git:  # the request never reaches the repository
                self.github.git_requests.append((url.path, fault.status))
                return self._empty(fault.status, fault.headers)
            self.github.requests.append((method, url.path))
            return self._json(fault.status, fault.body or {"message": "injected"}, fault.headers)
        if is_git:
            return self._git(method, url.path, url.query)
        self.github.requests.append((method, url.path))
        body = self._body()
        if self._checks(method, url.path, url.query):
            return None
        for route_method, pattern, handler, auth in ROUTES:
            m = re.fullmatch(pattern, url.path)
            if m and route_method == method:
                if not self._authorised(auth, m.groupdict()):
                    return self._json(401, {"message": "Bad credentials"})
                params = {k: v[0] for k, v in parse_qs(url.query).items()}
                status, data = handler(self.github, m.groupdict(), params, json.loads(body or b"null"))
                return self._json(status, data)
        self._json(404, {"message": "Not Found"})

    def _checks(self, method: str, path: str, query: str) -> bool:
        """CI and review routes (fake_github_checks): their handlers also read the token's permissions."""
        for route_method, pattern, handler, auth in checks_routes:
            m = re.fullmatch(pattern, path)
            if m and route_method == method:
                if auth != "none" and not self._authorised(auth, m.groupdict()):
                    self._json(401, {"message": "Bad credentials"})
                else:
                    params = {k: v[0] for k, v in parse_qs(query).items()}
                    self._json(*handler(self.github, m.groupdict(), params, None, self.headers))
                return True
        return False

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorised(self, auth: str, groups: dict[str, str]) -> bool:
        scheme, _, credential = (self.headers.get("Authorization") or "").partition(" ")
        if auth == "jwt":
            return scheme.lower() == "bearer" and self.github.check_jwt(credential)
        if auth == "any":
            return self.github.check_jwt(credential) or credential in self.github.tokens
        return self.github.token_allows(credential, f"{groups['owner']}/{groups['name']}")

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        if status == 302:  # a redirect to a short-lived URL (Actions logs)
            self.send_response(302)
            self.send_header("Location", data["location"])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        text = isinstance(data, str)  # a plain-text body (a log)
        raw = b"" if status == 204 else data.encode() if text else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if text else "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _empty(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    # -- git smart HTTP --------------------
    def _git(self, method: str, path: str, query: str) -> None:
        repo = "/".join(path.strip("/").split("/")[:2])[: -len(".git")]
        if not self._git_authorised(repo):
            self.github.git_requests.append((path, 401))
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.github.git_requests.append((path, 200))
        body = self._body()
        env = {
            "PATH": os.environ["PATH"],
            "GIT_PROJECT_ROOT": str(self.github.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "REQUEST_METHOD": method,
            "QUERY_STRING": query,
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        headers = [line.split(":", 1) for line in head.decode().split("\r\n") if ":" in line]
        status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
        self.send_response(status)
        for key, value in headers:
            if key.lower() != "status":
                self.send_header(key, value.strip())
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _git_authorised(self, repo: str) -> bool:
        scheme, _, credential = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        user, _, token = base64.b64decode(credential).decode().partition(":")
        return user == "x-access-token" and self.github.token_allows(token, repo)


# -- REST routes --------------------
Handler = Callable[[Any, dict[str, str], dict[str, str], Any], Reply]


def _repo(gh: Any, g: dict[str, str]) -> dict[str, Any]:
    return gh.repos[f"{g['owner']}/{g['name']}"]


def get_app(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    return 200, {"id": gh.app_id, "slug": "mini-fix-test", "name": "mini-fix (test)"}


def mint_token(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    return 201, gh.mint(int(g["installation"]), body or {})


def get_user(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    uid = BOT_ID if g["login"].endswith("[bot]") else 7
    return 200, {"login": g["login"], "id": uid, "type": "Bot" if uid == BOT_ID else "User"}


def get_repo(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    r = _repo(gh, g)
    return 200, {
        "id": r["id"],
        "name": r["name"],
        "full_name": r["full_name"],
        "private": r["private"],
        "default_branch": r["default_branch"],
        "clone_url": f"{gh.base_url}/{r['full_name']}.git",
        "owner": {"login": r["owner"]},
    }


def get_permission(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    role = gh.permissions.get(g["user"], "none")
    if role == "none":
        return 404, {"message": "Not Found"}
    return 200, {"permission": LEGACY[role], "role_name": role, "user": {"login": g["user"]}}


def get_issue(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    issue = gh.issues.get((f"{g['owner']}/{g['name']}", int(g["number"])))
    return (200, issue) if issue else (404, {"message": "Not Found"})


def list_comments(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    found = gh.comments_on(f"{g['owner']}/{g['name']}", int(g["number"]))
    per_page, page = int(q.get("per_page", 30)), int(q.get("page", 1))
    return 200, found[(page - 1) * per_page : page * per_page]


def list_review_comments(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo, number = f"{g['owner']}/{g['name']}", int(g["number"])
    found = [c for c in gh.review_comments if c["repo"] == repo and c["pull"] == number]
    per_page, page = int(q.get("per_page", 30)), int(q.get("page", 1))
    return 200, found[(page - 1) * per_page : page * per_page]


def create_comment(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo, number = f"{g['owner']}/{g['name']}", int(g["number"])
    if len(body["body"]) > 65_536:
        return 422, {"message": "Validation Failed", "errors": [{"message": "body is too long"}]}
    cid = gh._comment(repo, number, body["body"], "mini-fix-test[bot]")
    return 201, next(c for c in gh.comments if c["id"] == cid)


def update_comment(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    comment = next((c for c in gh.comments if c["id"] == int(g["id"])), None)
    if comment is None:
        return 404, {"message": "Not Found"}
    if len(body["body"]) > 65_536:
        return 422, {"message": "Validation Failed", "errors": [{"message": "body is too long"}]}
    comment["body"] = body["body"]
    comment.setdefault("edits", 0)
    comment["edits"] += 1
    return 200, comment


def add_reaction(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    gh.reactions.append(
        {
            "repo": f"{g['owner']}/{g['name']}",
            "issue": int(g.get("number") or 0),
            "comment_id": int(g.get("id") or 0) or None,
            "content": body["content"],
        }
    )
    return 201, {"id": len(gh.reactions), "content": body["content"]}


def list_pulls(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = f"{g['owner']}/{g['name']}"
    found = [p for p in gh.pulls if p["repo"] == repo and p["state"] == q.get("state", "open")]
    if ":" in q.get("head", ""):  # GitHub ignores a head filter without the owner
        found = [p for p in found if f"{g['owner']}:{p['head']['ref']}" == q["head"]]
    return 200, found


def create_pull(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = f"{g['owner']}/{g['name']}"
    r = _repo(gh, g)
    if body.get("draft") and not r["drafts"]:
        return 422, {
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": "Draft pull requests are not supported in this repository.",
                }
            ],
        }
    if gh.branch_head(repo, body["head"]) is None:
        return 422, {"message": "Validation Failed", "errors": [{"field": "head", "code": "invalid"}]}
    if any(p["repo"] == repo and p["head"]["ref"] == body["head"] and p["state"] == "open" for p in gh.pulls):
        return 422, {
            "message": "Validation Failed",
            "errors": [{"message": f"A pull request already exists for {g['owner']}:{body['head']}."}],
        }
    number = gh._next_number(repo)
    pull = {
        "number": number,
        "repo": repo,
        "title": body["title"],
        "body": body.get("body", ""),
        "draft": bool(body.get("draft")),
        "state": "open",
        "head": {"ref": body["head"], "repo": {"full_name": repo}},
        "base": {"ref": body["base"]},
        "html_url": f"{gh.base_url}/{repo}/pull/{number}",
        "user": {"login": "mini-fix-test[bot]"},
    }
    gh.pulls.append(pull)
    gh.issues[(repo, number)] = {
        "number": number,
        "title": body["title"],
        "body": pull["body"],
        "state": "open",
        "user": {"login": "mini-fix-test[bot]"},
        "pull_request": {},
    }
    return 201, pull


def _pull(gh: Any, g: dict[str, str]) -> dict[str, Any] | None:
    repo = f"{g['owner']}/{g['name']}"
    return next((p for p in gh.pulls if p["repo"] == repo and p["number"] == int(g["number"])), None)


def get_pull(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    pull = _pull(gh, g)
    if pull is None:
        return 404, {"message": "Not Found"}
    sha = gh.branch_head(pull["repo"], pull["head"]["ref"]) or ""
    return 200, {**pull, "head": {**pull["head"], "sha": sha}}


def update_pull(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    pull = _pull(gh, g)
    if pull is None:
        return 404, {"message": "Not Found"}
    pull.update({k: body[k] for k in ("title", "body") if k in body})
    return 200, pull


ROUTES: list[tuple[str, str, Handler, str]] = [
    *config_routes,
    ("GET", "/app", get_app, "jwt"),
    ("POST", r"/app/installations/(?P<installation>\d+)/access_tokens", mint_token, "jwt"),
    ("GET", r"/users/(?P<login>[^/]+)", get_user, "any"),
    ("GET", REPO, get_repo, "repo"),
    ("GET", REPO + r"/collaborators/(?P<user>[^/]+)/permission", get_permission, "repo"),
    ("GET", REPO + r"/issues/(?P<number>\d+)", get_issue, "repo"),
    ("GET", REPO + r"/issues/(?P<number>\d+)/comments", list_comments, "repo"),
    ("POST", REPO + r"/issues/(?P<number>\d+)/comments", create_comment, "repo"),
    ("PATCH", REPO + r"/issues/comments/(?P<id>\d+)", update_comment, "repo"),
    ("POST", REPO + r"/issues/(?P<number>\d+)/reactions", add_reaction, "repo"),
    ("POST", REPO + r"/issues/comments/(?P<id>\d+)/reactions", add_reaction, "repo"),
    ("GET", REPO + r"/pulls", list_pulls, "repo"),
    ("POST", REPO + r"/pulls", create_pull, "repo"),
    ("GET", REPO + r"/pulls/(?P<number>\d+)", get_pull, "repo"),
    ("PATCH", REPO + r"/pulls/(?P<number>\d+)", update_pull, "repo"),
    ("GET", REPO + r"/pulls/(?P<number>\d+)/comments", list_review_comments, "repo"),
]
