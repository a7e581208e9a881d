"""FakeGitHub: the REST subset mini-fix uses, plus git smart HTTP (`git http-backend`), on 127.0.0.1.

State lives in plain dicts and lists that tests seed and inspect. REST calls must carry a token this fake
minted for the repository they touch (or the App's JWT for /app routes); git calls must carry
`x-access-token:<token>` as HTTP Basic auth, so a clone without the header, or with a made-up token,
fails like it would on GitHub.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from tests.support.fake_forge import FakeForge
from tests.support.fake_github_checks import ChecksState
from tests.support.fake_github_http import GitHubHandler

APP_SLUG = "mini-fix-test"
BOT_ID = 4242
LEGACY = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}


class FakeGitHub(FakeForge):
    """A fake GitHub for one test: `start()` returns the base URL for MINIFIX_GITHUB_API_URL."""

    handler = GitHubHandler

    def __init__(self, app_id: int = 1234) -> None:
        super().__init__("fake-github-")
        self.app_id = app_id
        self.repos: dict[str, dict[str, Any]] = {}
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}
        self.comments: list[dict[str, Any]] = []
        self.review_comments: list[dict[str, Any]] = []  # PR review comments (on a file and line)
        self.reactions: list[dict[str, Any]] = []
        self.pulls: list[dict[str, Any]] = []
        self.permissions: dict[str, str] = {}
        self.labels: dict[str, list[dict[str, Any]]] = {}  # repo -> labels (name, color, description)
        self.teams: dict[tuple[str, str], set[str]] = {}  # (org, team slug) -> member logins
        self.tokens: dict[str, dict[str, Any]] = {}  # token -> {installation, repositories, permissions}
        self.token_lifetime: float | None = None  # seconds a minted token works (None: until 2099)
        self.checks = ChecksState()  # check runs, Actions job logs, reviews (fake_github_checks)

    # -- seeding --------------------
    def add_repo(
        self,
        owner: str,
        name: str,
        files: dict[str, str],
        default_branch: str = "main",
        *,
        private: bool = False,
        drafts: bool = True,
    ) -> dict[str, Any]:
        """A repository with one commit holding `files` on `default_branch`."""
        full = f"{owner}/{name}"
        bare = self.root / owner / f"{name}.git"
        self._seed(bare, self.root / "_work" / full, files, default_branch)
        self.repos[full] = {
            "id": len(self.repos) + 1,
            "name": name,
            "full_name": full,
            "owner": owner,
            "default_branch": default_branch,
            "private": private,
            "drafts": drafts,
            "bare": bare,
            "next_number": 1,
        }
        return self.repos[full]

    def add_issue(
        self, repo: str, title: str, body: str = "", author: str = "alice", labels: list[str] | None = None
    ) -> int:
        """An open issue; returns its number."""
        number = self._next_number(repo)
        self.issues[(repo, number)] = {
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "user": {"login": author, "type": "User"},
            "labels": [{"name": n} for n in labels or []],
        }
        return number

    def add_comment(self, repo: str, issue: int, body: str, author: str) -> int:
        """A comment by a user; returns its id."""
        return self._comment(repo, issue, body, author)

    def add_review_comment(self, repo: str, pull: int, body: str, author: str, path: str, line: int) -> int:
        """A PR review comment on a line of a file; returns its id (ordered with the other comments)."""
        with self.lock:
            n = len(self.comments) + len(self.review_comments)
            cid = 1000 + n
            self.review_comments.append(
                {"id": cid, "repo": repo, "pull": pull, "body": body, "user": {"login": author},
                 "path": path, "line": line, "created_at": _stamp(n)}
            )  # fmt: skip
        return cid

    def close_pull(self, repo: str, number: int, *, merged: bool = False) -> None:
        """A person closes (or merges) a pull request."""
        pull = next(p for p in self.pulls if p["repo"] == repo and p["number"] == number)
        pull.update(state="closed", merged=merged)
        self.issues[(repo, number)]["state"] = "closed"

    def set_permission(self, user: str, role: str) -> None:
        """A collaborator's role: admin, maintain, write, triage, read (or none to remove)."""
        self.permissions[user] = role

    # -- inspection --------------------
    def _bare(self, repo: str) -> Path:
        bare: Path = self.repos[repo]["bare"]
        return bare

    def comments_on(self, repo: str, issue: int) -> list[dict[str, Any]]:
        """Comments on one issue or PR, oldest first."""
        return [c for c in self.comments if c["repo"] == repo and c["issue"] == issue]

    # -- internals --------------------
    def _next_number(self, repo: str) -> int:
        with self.lock:
            number: int = self.repos[repo]["next_number"]
            self.repos[repo]["next_number"] += 1
        return number

    def _comment(self, repo: str, issue: int, body: str, author: str) -> int:
        with self.lock:
            n = len(self.comments) + len(self.review_comments)
            self.comments.append(
                {
                    "id": 1000 + n,
                    "repo": repo,
                    "issue": issue,
                    "body": body,
                    "user": {"login": author},
                    "created_at": _stamp(n),
                }
            )
            cid: int = self.comments[-1]["id"]
        return cid

    def mint(self, installation: int, body: dict[str, Any]) -> dict[str, Any]:
        """A new installation token for the requested repositories and permissions."""
        token = "ghs_" + secrets.token_hex(16)
        lifetime = self.token_lifetime
        expires = time.time() + lifetime if lifetime is not None else None
        self.tokens[token] = {
            "installation": installation,
            "repositories": body.get("repositories"),
            "permissions": body.get("permissions") or {},
            "expires": expires,
        }
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires)) if expires else "2099-01-01T00:00:00Z"
        return {"token": token, "expires_at": stamp, "permissions": body.get("permissions") or {}}

    def token_allows(self, token: str, repo: str) -> bool:
        """Whether a token was minted here and covers `repo` (None = all repositories)."""
        grant = self.tokens.get(token)
        if grant is None or (grant.get("expires") is not None and grant["expires"] < time.time()):
            return False
        names = grant["repositories"]
        return names is None or repo.split("/", 1)[1] in names

    def check_jwt(self, token: str) -> bool:
        """A JWT whose issuer is this App (the signature is not checked: tests generate throwaway keys)."""
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return False
        return str(claims.get("iss")) == str(self.app_id)


@functools.cache
def throwaway_key() -> str:
    """An RSA private key (PEM) for the App's JWT; the fake does not check signatures."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    return pem.decode()


def _stamp(n: int) -> str:
    """The n-th comment's creation time: one second apart, so ISO strings sort in posting order."""
    return f"2024-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"


def widgets_github() -> Iterator[FakeGitHub]:
    """A started fake with `acme/widgets` (calc.py's `add` subtracts) and alice as a writer; stopped after."""
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "widgets", {"calc.py": "def add(a, b):\n    return a - b\n"})
    fake.set_permission("alice", "write")
    yield fake
    fake.stop()
