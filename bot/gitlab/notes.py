"""Issues and their notes on GitLab: an issue (or MR) read as one, its comments (notes, system notes left out),
its diff notes, award emoji as reactions, and posting or editing the bot's own notes."""

from __future__ import annotations

from typing import Any

import structlog

from bot.forge_ids import is_mr
from bot.github.gateway import Comment, GitHubError, Issue
from bot.gitlab.errors import GitLabError
from bot.gitlab.project import STATES, ProjectApi

log = structlog.get_logger(__name__)

# GitHub's reaction names as GitLab's award emoji
EMOJI = {"+1": "thumbsup", "-1": "thumbsdown", "laugh": "laughing", "hooray": "tada", "confused": "confused",
         "heart": "heart", "rocket": "rocket", "eyes": "eyes"}  # fmt: skip


class Notes(ProjectApi):
    def get_issue(self, number: int) -> Issue:
        """An issue, or a merge request seen as one."""
        if is_mr(number):
            d = self._get("reading the merge request", self._noteable(number))
        else:
            d = self._get("reading the issue", self._noteable(number))
        body = str(d.get("description") or "")
        author = self._author(d.get("author"))
        return Issue(
            number, str(d.get("title") or ""), body, author, STATES.get(str(d.get("state")), "open"), is_mr(number)
        )

    def _notes(self, number: int) -> list[dict[str, Any]]:
        found = self._list("listing notes", self._noteable(number) + "/notes", sort="asc", order_by="created_at")
        for note in found:
            self.forge.note_parents[int(note["id"])] = number
        return found

    def list_comments(self, number: int) -> list[Comment]:
        """The notes people (and the bot) wrote, oldest first: system notes ("added label", "mentioned in") and a
        merge request's diff notes (`list_review_comments`) left out."""
        return [
            Comment(
                int(n["id"]), self._author(n.get("author")), str(n.get("body") or ""), str(n.get("created_at") or "")
            )
            for n in self._notes(number)
            if not n.get("system") and n.get("type") != "DiffNote"
        ]

    def list_review_comments(self, number: int) -> list[Comment]:
        """A merge request's diff notes, oldest first, each body prefixed with its file and line."""
        if not is_mr(number):
            return []
        found = []
        for n in self._notes(number):
            if n.get("system") or n.get("type") != "DiffNote":
                continue
            pos = n.get("position") or {}
            line = pos.get("new_line") or pos.get("old_line") or "?"
            body = f"On `{pos.get('new_path') or pos.get('old_path') or ''}` line {line}:\n{n.get('body') or ''}"
            found.append(Comment(int(n["id"]), self._author(n.get("author")), body, str(n.get("created_at") or "")))
        return found

    def add_reaction(self, number: int, content: str, *, comment_id: int | None = None) -> None:
        """An award emoji on the issue or MR, or on one of its notes; a failure (one already awarded) is logged."""
        path = self._noteable(number) + (f"/notes/{comment_id}" if comment_id else "") + "/award_emoji"
        try:
            self._post("adding a reaction", path, {"name": EMOJI.get(content, content)})
        except GitHubError as exc:
            log.warning("gitlab_reaction_failed", error=str(exc))

    def create_comment(self, number: int, body: str) -> int:
        """Post a note; return its id."""
        note = self._post("posting a comment", self._noteable(number) + "/notes", {"body": body})
        self.forge.note_parents[int(note["id"])] = number
        return int(note["id"])

    def post_comment(self, number: int, body: str) -> None:
        """Post a note whose id nobody needs; a failure is logged."""
        try:
            self.create_comment(number, body)
        except GitHubError as exc:
            log.warning("gitlab_comment_failed", error=str(exc))

    def update_comment(self, comment_id: int, body: str) -> None:
        """Edit a note (through the issue or MR it is on: one this process posted or listed)."""
        number = self.forge.note_parents.get(comment_id)
        if number is None:
            raise GitLabError(f"editing a comment: note {comment_id} is on no issue or merge request seen here")
        self._put("editing a comment", f"{self._noteable(number)}/notes/{comment_id}", {"body": body})
