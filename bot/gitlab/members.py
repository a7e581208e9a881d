"""Who may do what on a GitLab project: a user's role from their effective access level, and group membership."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from bot.gitlab.errors import GitLabError
from bot.gitlab.project import ProjectApi

# `members/all/:user_id` access levels (inherited group members appear only there) as the protocol's roles.
ROLES = ((50, "admin"), (40, "maintain"), (30, "write"), (1, "read"))


class Members(ProjectApi):
    def permission(self, user: str) -> str:
        """The user's role from their effective access level (`members/all`: inherited ones too); none: 404."""
        match = self._find_user(user)
        if match is None:
            return "none"
        try:
            member = self._get("reading a permission", f"/members/all/{int(match['id'])}")
        except GitLabError as exc:
            if exc.status == 404:
                return "none"
            raise
        level = int(member.get("access_level") or 0)
        return next((role for floor, role in ROLES if level >= floor), "none")

    def team_member(self, team: str, user: str) -> bool:
        """Whether `user` is a member of group `team` (a full path, or a subgroup of the project's top group)."""
        group = team if "/" in team else f"{self.repo.split('/', 1)[0]}/{team}"
        match = self._find_user(user)
        if match is None:
            return False
        try:
            self.forge.call(
                "reading a group membership",
                lambda: self.forge.gl.http_get(f"/groups/{quote(group, safe='')}/members/all/{int(match['id'])}"),
            )
        except GitLabError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def _find_user(self, user: str) -> dict[str, Any] | None:
        """The instance's user named `user` (GitLab usernames compare case-insensitively), or None."""
        users = self.forge.call(
            "finding a user", lambda: self.forge.gl.http_list("/users", query_data={"username": user})
        )
        return next((u for u in users if str(u.get("username", "")).casefold() == user.casefold()), None)
