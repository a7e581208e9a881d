"""A GitLab project's repository side: its default branch and clone URL, files on that branch (the repository's
config), labels, and git over HTTPS with the token as password under the username `oauth2`."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import quote

import requests

from bot.github.gateway import BotIdentity, GitToken, GitUserToken, RepoInfo
from bot.gitlab.errors import GitLabError
from bot.gitlab.project import ProjectApi

GIT_USERNAME = "oauth2"  # GitLab's git over HTTPS with an OAuth-style or access token
NEVER_EXPIRES = 10 * 365 * 86400.0  # an access token's expiry is the operator's to manage, not minted per job
MISSING = (403, 404)  # a file, or the project to this token, that is not there


class Repository(ProjectApi):
    def get_repo(self) -> RepoInfo:
        """The project's default branch, HTTPS clone URL and visibility."""
        d = self._get("reading the project", "")
        self._default_branch = str(d.get("default_branch") or "main")
        return RepoInfo(
            str(d["path_with_namespace"]),
            self._default_branch,
            str(d["http_url_to_repo"]),
            str(d.get("visibility") or "private") != "public",
            int(d["id"]),
        )

    def read_file(self, path: str) -> str | None:
        """A file's text on the default branch; None when it (or the project, to this token) is missing."""
        if self._default_branch is None:
            try:
                self.get_repo()
            except GitLabError as exc:
                if exc.status in MISSING:
                    return None
                raise
        where = f"/repository/files/{quote(path, safe='')}/raw"
        try:
            raw = self.forge.call(
                "reading a file",
                lambda: self.forge.gl.http_get(self._p + where, query_data={"ref": self._default_branch}, raw=True),
            )
        except GitLabError as exc:
            if exc.status in MISSING:
                return None
            raise
        return _text(raw)

    def list_labels(self) -> list[str]:
        """The project's labels (group labels it inherits included, as GitLab lists them)."""
        return [str(lb["name"]) for lb in self._list("listing labels", "/labels")]

    def create_label(self, name: str, color: str, description: str) -> None:
        """Create a label (GitLab wants `#RRGGBB`); one that exists (409) is left alone."""
        data = {"name": name, "color": color if color.startswith("#") else f"#{color}", "description": description}
        try:
            self._post("creating a label", "/labels", data)
        except GitLabError as exc:
            if exc.status != 409:
                raise

    def git_token(self) -> str:
        """The token for git over HTTPS, sent under the username `oauth2`."""
        return GitUserToken(self.forge.token, GIT_USERNAME)

    def git_credential(self) -> GitToken:
        """The token for git, with no expiry of its own to renew."""
        return GitToken(self.git_token(), time.time() + NEVER_EXPIRES)

    def bot_identity(self) -> BotIdentity:
        """The token's user as git author: its username (the name CI follow-ups compare a Pipeline Hook's `user`
        with, as GitHub's App login), and its commit email (GitLab's noreply address otherwise)."""
        me = self.forge.me()
        host = re.sub(r"^https?://", "", self.forge.url).split("/", 1)[0].split(":", 1)[0]
        email = str(me.get("commit_email") or me.get("public_email") or "")
        if not email or "@" not in email:
            email = f"{me.get('id')}-{me.get('username')}@users.noreply.{host}"
        return BotIdentity(str(me.get("username") or "mini-fix"), email)


def _text(raw: Any) -> str:
    """A raw file response's bytes as text (undecodable bytes replaced)."""
    content = raw.content if isinstance(raw, requests.Response) else raw
    return bytes(content).decode("utf-8", "replace") if isinstance(content, bytes | bytearray) else str(content)
