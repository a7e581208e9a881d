"""Merge requests as the protocol's pull requests: a PR is an MR opened as `Draft:` whose description closes the
issue with `Closes #<iid>`; its number is `forge_ids.mr_number(iid)`."""

from __future__ import annotations

import re
from typing import Any

from bot.forge_ids import mr_number
from bot.github.gateway import PullRequest
from bot.gitlab.project import STATES, ProjectApi

DRAFT = re.compile(r"(?i)\s*(?:draft:|\[draft\]|\(draft\))\s*")
FIXES = re.compile(r"\AFixes #(\d+)\b")


class MergeRequests(ProjectApi):
    def _pull(self, d: dict[str, Any]) -> PullRequest:
        title = str(d.get("title") or "")
        own = d.get("source_project_id") == d.get("project_id")
        return PullRequest(
            number=mr_number(int(d["iid"])),
            url=str(d.get("web_url") or ""),
            body=str(d.get("description") or ""),
            draft=bool(d.get("draft") or d.get("work_in_progress")) or DRAFT.match(title) is not None,
            head=str(d.get("source_branch") or ""),
            head_sha=str(d.get("sha") or ""),
            state=STATES.get(str(d.get("state")), "open"),
            merged=d.get("state") == "merged",
            author=self._author(d.get("author")),
            head_repo=self.repo if own else "",
        )

    def find_open_pr(self, branch: str) -> PullRequest | None:
        """The open MR from `branch` of this project (a fork's branch of the same name is not ours)."""
        found = self._list("looking for the merge request", "/merge_requests", state="opened", source_branch=branch)
        ours = [self._pull(d) for d in found]
        return next((pr for pr in ours if pr.head_repo), None)

    def create_pr(self, *, title: str, body: str, head: str, base: str) -> PullRequest:
        """Open a draft MR (`Draft:` title) whose description closes the issue with GitLab's `Closes #<iid>`."""
        data = {"title": _draft(title), "description": _closes(body), "source_branch": head, "target_branch": base}
        return self._pull(self._post("opening the merge request", "/merge_requests", data))

    def update_pr(self, number: int, *, title: str, body: str) -> None:
        """Replace the MR's title and description; a draft stays a draft (GitLab reads that from the title), one a
        person marked ready stays ready."""
        current = self._pull(self._get("reading the merge request", self._noteable(number)))
        data = {"title": _draft(title) if current.draft else title, "description": _closes(body)}
        self._put("updating the merge request", self._noteable(number), data)

    def get_pr(self, number: int) -> PullRequest:
        """One merge request."""
        return self._pull(self._get("reading the merge request", self._noteable(number)))

    def list_open_prs(self) -> list[PullRequest]:
        """Every open merge request."""
        return [self._pull(d) for d in self._list("listing merge requests", "/merge_requests", state="opened")]


def _draft(title: str) -> str:
    """The title with GitLab's draft prefix, once."""
    return title if DRAFT.match(title) else f"Draft: {title}"


def _closes(body: str) -> str:
    """GitLab's closing phrase for the description's first line (`Fixes #N` → `Closes #N`; both close on GitLab)."""
    return FIXES.sub(r"Closes #\1", body, count=1)
