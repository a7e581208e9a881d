"""The HTTP side of FakeGitHub: REST routes over its state, and git smart HTTP through `git http-backend`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult, parse_qs

from tests.support.fake_forge import ForgeHandler, Reply, find_route
from tests.support.fake_github_checks import ROUTES as checks_routes
from tests.support.fake_github_config import ROUTES as config_routes
from tests.support.fake_github_faults import GIT_PATH

BAD_CREDENTIALS = {"message": "Bad credentials"}
REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
LEGACY = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}
BOT_ID = 4242


class GitHubHandler(ForgeHandler):
    """One request to FakeGitHub: REST needs a token minted for the repository (or the App's JWT); git needs
    `x-access-token:<token>` as Basic auth."""

    git_path = re.compile(GIT_PATH)
    realm = "GitHub"

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def _rest(self, method: str, url: SplitResult, body: bytes) -> None:
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        if found := find_route(checks_routes, method, url.path):  # their handlers also read the token's permissions
            (_, _, handler, auth), groups = found
            if auth != "none" and not self._authorised(auth, groups):
                return self._send(401, BAD_CREDENTIALS)
            return self._send(*handler(self.forge, groups, params, None, self.headers))
        if found := find_route(ROUTES, method, url.path):
            (_, _, handler, auth), groups = found
            if not self._authorised(auth, groups):
                return self._send(401, BAD_CREDENTIALS)
            return self._send(*handler(self.forge, groups, params, json.loads(body or b"null")))
        self._send(404, {"message": "Not Found"})

    def _authorised(self, auth: str, groups: dict[str, str]) -> bool:
        scheme, _, credential = (self.headers.get("Authorization") or "").partition(" ")
        if auth == "jwt":
            return scheme.lower() == "bearer" and self.forge.check_jwt(credential)
        if auth == "any":
            return self.forge.check_jwt(credential) or credential in self.forge.tokens
        return self.forge.token_allows(credential, f"{groups['owner']}/{groups['name']}")

    def _git(self, method: str, match: re.Match[str], url: SplitResult, body: bytes) -> None:
        repo = "/".join(url.path.strip("/").split("/")[:2])[: -len(".git")]
        basic = self._basic_auth()
        if basic is None or basic[0] != "x-access-token" or not self.forge.token_allows(basic[1], repo):
            return self._git_refuse(url.path)
        self._git_backend(method, url, body, "x-access-token")


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
