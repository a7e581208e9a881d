"""What every part of the GitLab gateway shares: one project's API path, its REST verbs through the instance's
bounded calls, and how a number, a user and a state map onto the gateway protocol's shapes."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from bot.forge_ids import iid_of, is_mr
from bot.gitlab.instance import GitLabInstance

STATES = {"opened": "open", "closed": "closed", "merged": "closed", "locked": "closed"}


class ProjectApi:
    """One GitLab project (`repo`: its path with namespace) on `forge`; the base of each resource's methods."""

    def __init__(self, forge: GitLabInstance, repo: str) -> None:
        self.forge, self.repo = forge, repo
        self._p = f"/projects/{quote(repo, safe='')}"
        self._default_branch: str | None = None

    def _get(self, what: str, path: str, **query: Any) -> Any:
        return self.forge.call(what, lambda: self.forge.gl.http_get(self._p + path, query_data=query or None))

    def _list(self, what: str, path: str, **query: Any) -> list[dict[str, Any]]:
        found = self.forge.call(
            what, lambda: self.forge.gl.http_list(self._p + path, query_data=query, get_all=True, per_page=100)
        )
        return [x for x in found if isinstance(x, dict)]

    def _post(self, what: str, path: str, data: dict[str, Any]) -> Any:
        return self.forge.call(what, lambda: self.forge.gl.http_post(self._p + path, post_data=data))

    def _put(self, what: str, path: str, data: dict[str, Any]) -> Any:
        return self.forge.call(what, lambda: self.forge.gl.http_put(self._p + path, post_data=data))

    @staticmethod
    def _noteable(number: int) -> str:
        return f"/merge_requests/{iid_of(number)}" if is_mr(number) else f"/issues/{iid_of(number)}"

    def _author(self, user: dict[str, Any] | None) -> str:
        """A username; the bot's own as `<username>[bot]`, so the pipeline knows its own comments as on GitHub."""
        user = user or {}
        name = str(user.get("username") or "")
        return f"{name}[bot]" if name and user.get("id") == self.forge.me().get("id") else name
