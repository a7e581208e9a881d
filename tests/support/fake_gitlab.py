"""FakeGitLab: the /api/v4 subset mini-fix uses, plus git smart HTTP (`git http-backend`), on 127.0.0.1.

Shapes follow GitLab's REST documentation (projects, members/all, issues, notes, award emoji, merge requests,
discussions, pipelines, jobs and their traces, repository files, labels, protected branches). State lives in plain
dicts and lists that tests seed and inspect. REST calls carry a token this fake knows (`PRIVATE-TOKEN`, or
`Authorization: Bearer`); git calls carry `oauth2:<token>` as HTTP Basic auth. A push to a protected branch by a
token whose user is below Maintainer there is refused by a pre-receive hook with GitLab's own words.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.support.fake_forge import FakeForge
from tests.support.fake_gitlab_http import GitLabHandler

BOT = "mini-fix-bot"
GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER = 10, 20, 30, 40, 50
PROTECTED_REFUSAL = "GitLab: You are not allowed to push code to protected branches on this project."
PRE_RECEIVE = f"""#!/bin/sh
# the fake GitLab's branch protection: the pusher's access level comes from the HTTP handler
while read old new ref; do
  branch=${{ref#refs/heads/}}
  if grep -qxF "$branch" protected 2>/dev/null && [ "${{FAKE_GITLAB_LEVEL:-0}}" -lt {MAINTAINER} ]; then
    echo "{PROTECTED_REFUSAL}" >&2
    exit 1
  fi
done
"""


class FakeGitLab(FakeForge):
    """A fake GitLab instance for one test: `start()` returns the base URL for MINIFIX_GITLAB_URL (its API is at
    `/api/v4`)."""

    handler = GitLabHandler

    def __init__(self) -> None:
        super().__init__("fake-gitlab-")
        self.users: dict[str, dict[str, Any]] = {}  # username -> {id, username, name, bot}
        self.tokens: dict[str, str] = {}  # token -> username
        self.projects: dict[str, dict[str, Any]] = {}  # path_with_namespace -> project
        self.members: dict[tuple[str, int], int] = {}  # (project path or group path, user id) -> access_level
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}  # (project, iid) -> issue
        self.merge_requests: list[dict[str, Any]] = []
        self.notes: list[dict[str, Any]] = []  # every note; `_project`, `_kind` ("issues"/"merge_requests"), `_iid`
        self.discussions: list[dict[str, Any]] = []  # MR discussions: `_project`, `_iid`, id, notes
        self.award_emoji: list[dict[str, Any]] = []  # `_project`, `_kind`, `_iid`, `_note` (None: the issue itself)
        self.labels: dict[str, list[dict[str, Any]]] = {}
        self.pipelines: list[dict[str, Any]] = []  # `_project`, id, sha, ref, status, `_jobs`
        self._ids = itertools.count(100)  # global ids: issues, MRs, notes, pipelines, jobs share one space here
        self.bot_token = self.add_user(BOT, name="mini-fix", bot=True)

    # -- seeding --------------------
    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    def add_user(self, username: str, *, name: str = "", bot: bool = False, user_id: int | None = None) -> str:
        """A user (with `user_id`, e.g. the one a webhook payload names) and a personal access token (returned)."""
        uid = user_id or len(self.users) + 1
        self.users[username] = {"id": uid, "username": username, "name": name or username, "bot": bot}
        token = f"glpat-{username}-{uid:04d}xxxxxxxxxxxx"
        self.tokens[token] = username
        return token

    def user_id(self, username: str) -> int:
        if username not in self.users:
            self.add_user(username)
        return int(self.users[username]["id"])

    def add_project(
        self, path: str, files: dict[str, str], default_branch: str = "main", *, private: bool = True
    ) -> dict[str, Any]:
        """A project `group[/sub]/name` with one commit holding `files`; its default branch protected (GitLab's
        default) and the bot a Developer."""
        bare = self.root / f"{path}.git"
        self._seed(bare, self.root / "_work" / path, files, default_branch)
        hook = bare / "hooks" / "pre-receive"
        hook.write_text(PRE_RECEIVE)
        hook.chmod(0o755)
        (bare / "protected").write_text(default_branch + "\n")
        namespace, _, name = path.rpartition("/")
        self.projects[path] = {
            "id": len(self.projects) + 1,
            "name": name,
            "path": name,
            "path_with_namespace": path,
            "namespace": {"full_path": namespace, "path": namespace.rsplit("/", 1)[-1], "kind": "group"},
            "default_branch": default_branch,
            "visibility": "private" if private else "public",
            "bare": bare,
            "next_iid": 1,
            "next_mr_iid": 1,
        }
        self.labels[path] = []
        self.set_access(path, BOT, DEVELOPER)
        return self.projects[path]

    def set_access(self, where: str, username: str, level: int) -> None:
        """A member's access level on a project or a group (a group's members are inherited by its projects and
        show only in `members/all`); 0 removes it."""
        key = (where, self.user_id(username))
        if level:
            self.members[key] = level
        else:
            self.members.pop(key, None)

    def access_level(self, project: str, user_id: int) -> int:
        """The user's effective level on a project: its own membership or any ancestor group's, the highest."""
        parts = project.split("/")
        scopes = [project] + ["/".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]
        return max((self.members.get((s, user_id), 0) for s in scopes), default=0)

    def protect(self, project: str, branch: str) -> None:
        """Protect a branch (Maintainers may push)."""
        with (self.projects[project]["bare"] / "protected").open("a") as f:
            f.write(branch + "\n")

    def protected_branches(self, project: str) -> list[str]:
        return (self.projects[project]["bare"] / "protected").read_text().split()

    def add_issue(self, project: str, title: str, description: str = "", author: str = "alice") -> int:
        """An open issue; returns its iid."""
        p = self.projects[project]
        with self.lock:
            iid = p["next_iid"]
            p["next_iid"] += 1
        self.issues[(project, iid)] = {
            "id": self.next_id(),
            "iid": iid,
            "project_id": p["id"],
            "title": title,
            "description": description,
            "state": "opened",
            "author": self._user(author),
            "labels": [],
            "web_url": f"{self.base_url}/{project}/-/issues/{iid}",
        }
        return iid

    def add_note(
        self, project: str, iid: int, body: str, author: str, *, kind: str = "issues", system: bool = False
    ) -> int:
        """A note by a person (or a system note) on an issue or MR; returns its id."""
        return int(self.note(project, kind, iid, body, author, system=system)["id"])

    def add_diff_note(self, project: str, mr_iid: int, body: str, author: str, path: str, line: int) -> int:
        """A review thread on a line of the MR's diff (a resolvable DiffNote starting a discussion)."""
        note = self.note(project, "merge_requests", mr_iid, body, author, diff=(path, line))
        self.discussions.append(
            {"id": f"{note['id']:040x}", "individual_note": False, "notes": [note], "_project": project, "_iid": mr_iid}
        )
        return int(note["id"])

    def resolve(self, note_id: int) -> None:
        """A reviewer resolves a thread."""
        next(n for n in self.notes if n["id"] == note_id)["resolved"] = True

    def add_pipeline(self, project: str, sha: str, ref: str, jobs: list[tuple[str, str, str]]) -> int:
        """A finished pipeline of `sha`; `jobs` as (name, status, trace). Returns its id."""
        pid = self.next_id()
        made = [{"id": self.next_id(), "name": n, "status": s, "stage": "test", "_trace": t} for n, s, t in jobs]
        status = "failed" if any(j["status"] == "failed" for j in made) else "success"
        self.pipelines.append(
            {"id": pid, "iid": pid, "project_id": self.projects[project]["id"], "sha": sha, "ref": ref,
             "status": status, "source": "push", "_project": project, "_jobs": made}
        )  # fmt: skip
        return pid

    def close_mr(self, project: str, iid: int, *, merged: bool = False) -> None:
        mr = self.mr(project, iid)
        assert mr is not None
        mr["state"] = "merged" if merged else "closed"

    # -- inspection --------------------
    def mr(self, project: str, iid: int) -> dict[str, Any] | None:
        return next((m for m in self.merge_requests if m["_project"] == project and m["iid"] == iid), None)

    def notes_on(self, project: str, iid: int, kind: str = "issues") -> list[dict[str, Any]]:
        """Notes on one issue or MR, oldest first (system notes too)."""
        return [n for n in self.notes if n["_project"] == project and n["_kind"] == kind and n["_iid"] == iid]

    def _bare(self, project: str) -> Path:
        bare: Path = self.projects[project]["bare"]
        return bare

    def trace_of(self, job_id: int) -> str | None:
        for pipeline in self.pipelines:
            for job in pipeline["_jobs"]:
                if job["id"] == job_id:
                    return str(job["_trace"])
        return None

    # -- internals --------------------
    def _user(self, username: str) -> dict[str, Any]:
        self.user_id(username)
        u = self.users[username]
        return {"id": u["id"], "username": u["username"], "name": u["name"], "state": "active"}

    def note(
        self,
        project: str,
        kind: str,
        iid: int,
        body: str,
        author: str,
        *,
        system: bool = False,
        diff: tuple[str, int] | None = None,
    ) -> dict[str, Any]:
        """Store a note; the parent's global id is its `noteable_id` (GitLab's), its iid `noteable_iid`."""
        parent = self.issues.get((project, iid)) if kind == "issues" else self.mr(project, iid)
        with self.lock:
            n = len(self.notes)
            note = {
                "id": next(self._ids),
                "type": "DiffNote" if diff else None,
                "body": body,
                "author": self._user(author),
                "created_at": f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "updated_at": f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "system": system,
                "noteable_id": parent["id"] if parent else None,
                "noteable_type": "Issue" if kind == "issues" else "MergeRequest",
                "noteable_iid": iid,
                "resolvable": diff is not None,
                "resolved": False if diff else None,
                "position": (
                    {
                        "position_type": "text",
                        "new_path": diff[0],
                        "old_path": diff[0],
                        "new_line": diff[1],
                        "old_line": None,
                    }
                    if diff
                    else None
                ),
                "_project": project,
                "_kind": kind,
                "_iid": iid,
                "_edits": 0,
            }
            self.notes.append(note)
        return note
