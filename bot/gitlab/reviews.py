"""A GitLab review as the protocol's one review object: a reviewer's unresolved diff threads on the MR
(`review_id` is the reviewer's user id; GitLab keeps N diff notes plus the reviewer's state, not one object)."""

from __future__ import annotations

from typing import Any

from bot.github.gateway import Review, ReviewComment
from bot.gitlab.errors import GitLabError
from bot.gitlab.project import ProjectApi


class Reviews(ProjectApi):
    def get_review(self, pull: int, review_id: int) -> Review:
        """The review of the reviewer whose user id is `review_id`: their unresolved diff threads on the MR."""
        found = self._list("reading the review's threads", self._noteable(pull) + "/discussions")
        comments, author = [], ""
        for discussion in found:
            notes = [n for n in discussion.get("notes") or [] if isinstance(n, dict)]
            first = notes[0] if notes else {}
            if not _open_thread_of(first, review_id):
                continue
            author = self._author(first.get("author"))
            comments.append(_thread_comment(first, notes))
        if not author:
            author = self._username(review_id)
        return Review(review_id, author, "changes_requested", "", tuple(comments))

    def _username(self, user_id: int) -> str:
        try:
            user = self.forge.call("reading a user", lambda: self.forge.gl.http_get(f"/users/{user_id}"))
        except GitLabError:
            return ""
        return str(user.get("username") or "")


def _open_thread_of(first: dict[str, Any], reviewer_id: int) -> bool:
    """Whether a discussion whose first note is `first` is the reviewer's, a person's, and still unresolved."""
    if (first.get("author") or {}).get("id") != reviewer_id or first.get("system"):
        return False
    return bool(first.get("resolvable")) and not first.get("resolved")


def _thread_comment(first: dict[str, Any], notes: list[dict[str, Any]]) -> ReviewComment:
    """One thread as a review comment: its place in the diff, and its notes' bodies (system notes left out)."""
    pos = first.get("position") or {}
    line = pos.get("new_line") or pos.get("old_line")
    body = "\n\n".join(str(n.get("body") or "") for n in notes if not n.get("system"))
    path = str(pos.get("new_path") or pos.get("old_path") or "")
    return ReviewComment(int(first["id"]), path, line if isinstance(line, int) else None, "", body)
