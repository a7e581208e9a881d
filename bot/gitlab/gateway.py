"""One GitLab project as the gateway protocol (`bot.github.gateway.GitHubGateway`), through python-gitlab.

How GitLab's objects map onto the protocol's (GitHub's) shapes:
- numbers: an issue is its iid; a merge request is `ids.mr_number(iid)` (the two count separately on GitLab);
- roles: `members/all/:user_id` (inherited group members appear only there; 404: none) — Owner (50) `admin`,
  Maintainer (40) `maintain`, Developer (30) `write`, Reporter/Guest `read`;
- comments: notes, oldest first, system notes left out; the bot's own notes authored `<username>[bot]` as on GitHub;
- reactions: award emoji (GitHub's names translated); a PR: a merge request opened as `Draft:`, its description
  closing the issue with `Closes #<iid>`;
- CI evidence: the failed jobs of the commit's newest pipeline as check runs (`app` GITLAB_CI), their traces' tails
  as job logs; a review: the reviewer's unresolved diff threads on the MR (`review_id` is the reviewer's user id);
- git: the token as password under the username `oauth2`.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import gitlab
import requests
import structlog

from bot.forge_ids import iid_of, is_mr, mr_number
from bot.github.gateway import (
    BotIdentity,
    CheckRun,
    Comment,
    GitHubError,
    GitToken,
    GitUserToken,
    Issue,
    PullRequest,
    RepoInfo,
    Review,
    ReviewComment,
)
from bot.github.repo import log_text, tail_of
from bot.gitlab.errors import GitLabError, RetryAfter, call
from bot.gitlab.traces import clean_trace

log = structlog.get_logger(__name__)

GITLAB_CI = "gitlab-ci"  # CheckRun.app of a GitLab CI job: its id is the job's, its log the job's trace
GIT_USERNAME = "oauth2"  # GitLab's git over HTTPS with an OAuth-style or access token
TRACE_TAIL_BYTES = 1 << 20  # as GitHub's job logs (bot/github/repo.py)
TRACE_READ_BYTES = 64 << 20
NEVER_EXPIRES = 10 * 365 * 86400.0  # an access token's expiry is the operator's to manage, not minted per job
DRAFT = re.compile(r"(?i)\s*(?:draft:|\[draft\]|\(draft\))\s*")
FIXES = re.compile(r"\AFixes #(\d+)\b")
EMOJI = {"+1": "thumbsup", "-1": "thumbsdown", "laugh": "laughing", "hooray": "tada", "confused": "confused",
         "heart": "heart", "rocket": "rocket", "eyes": "eyes"}  # fmt: skip
ROLES = ((50, "admin"), (40, "maintain"), (30, "write"), (1, "read"))
STATES = {"opened": "open", "closed": "closed", "merged": "closed", "locked": "closed"}


class _Client(gitlab.Gitlab):
    """python-gitlab with its own 429 handling off (it sleeps whatever `Retry-After` says, unbounded): `errors.call`
    waits within a bound instead; server errors keep python-gitlab's few retries."""

    def http_request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.update(obey_rate_limit=False, max_retries=3)
        return super().http_request(*args, **kwargs)


class NoteParents:
    """note id -> the number of its issue or MR, for the notes this process posted or listed (GitLab edits a note
    through its parent); the oldest forgotten past MAX_NOTES, so a long-lived worker's memory stays bounded."""

    MAX_NOTES = 20_000

    def __init__(self) -> None:
        self._found: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def __setitem__(self, note_id: int, number: int) -> None:
        with self._lock:
            self._found[note_id] = number
            self._found.move_to_end(note_id)
            while len(self._found) > self.MAX_NOTES:
                self._found.popitem(last=False)

    def get(self, note_id: int) -> int | None:
        with self._lock:
            return self._found.get(note_id)

    def __len__(self) -> int:
        return len(self._found)


class GitLabForge:
    """The GitLab instance: one python-gitlab client, the bot's identity, and which issue or MR each note we saw
    is on (GitLab edits a note through its parent). One per worker process."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float | None = None,
    ) -> None:
        self.url, self._token = url.rstrip("/"), token
        self.waits = RetryAfter()
        session = requests.Session()
        session.hooks["response"].append(self.waits.hook)
        # 429s are waited out by `errors.call` (bounded, then RateLimited); python-gitlab retries 5xx itself.
        self.gl = _Client(self.url, private_token=token, session=session, retry_transient_errors=True, timeout=60)
        self.sleep = sleep
        self.max_wait = max_wait
        self.note_parents = NoteParents()
        self._me: dict[str, Any] | None = None

    def for_repo(self, installation_id: int, repo: str) -> GitLabGateway:
        """The gateway for project `repo` (its path with namespace)."""
        return GitLabGateway(self, repo)

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        kwargs: dict[str, Any] = {"max_wait": self.max_wait} if self.max_wait is not None else {}
        return call(what, fn, secret=self._token, waits=self.waits, sleep=self.sleep, **kwargs)

    @property
    def token(self) -> str:
        return self._token

    def me(self) -> dict[str, Any]:
        """The token's user (`/user`): a bot user, or a group/project access token's bot."""
        if self._me is None:
            self._me = self.call("reading the bot user", lambda: self.gl.http_get("/user"))
        return self._me


class GitLabGateway:
    """GitHubGateway for one GitLab project."""

    def __init__(self, forge: GitLabForge, repo: str) -> None:
        self.forge, self.repo = forge, repo
        self._p = f"/projects/{quote(repo, safe='')}"
        self._default_branch: str | None = None

    # -- plumbing --------------------
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

    # -- the protocol --------------------
    def permission(self, user: str) -> str:
        """The user's role from their effective access level (`members/all`: inherited ones too); none: 404."""
        users = self.forge.call(
            "finding a user", lambda: self.forge.gl.http_list("/users", query_data={"username": user})
        )
        match = next((u for u in users if str(u.get("username", "")).casefold() == user.casefold()), None)
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

    def read_file(self, path: str) -> str | None:
        """A file's text on the default branch; None when it (or the project, to this token) is missing."""
        if self._default_branch is None:
            try:
                self.get_repo()
            except GitLabError as exc:
                if exc.status in (403, 404):
                    return None
                raise
        where = f"/repository/files/{quote(path, safe='')}/raw"
        try:
            raw = self.forge.call(
                "reading a file",
                lambda: self.forge.gl.http_get(self._p + where, query_data={"ref": self._default_branch}, raw=True),
            )
        except GitLabError as exc:
            if exc.status in (403, 404):
                return None
            raise
        content = raw.content if isinstance(raw, requests.Response) else raw
        return bytes(content).decode("utf-8", "replace") if isinstance(content, bytes | bytearray) else str(content)

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

    def team_member(self, team: str, user: str) -> bool:
        """Whether `user` is a member of group `team` (a full path, or a subgroup of the project's top group)."""
        group = team if "/" in team else f"{self.repo.split('/', 1)[0]}/{team}"
        users = self.forge.call(
            "finding a user", lambda: self.forge.gl.http_list("/users", query_data={"username": user})
        )
        match = next((u for u in users if str(u.get("username", "")).casefold() == user.casefold()), None)
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

    def list_open_prs(self) -> list[PullRequest]:
        """Every open merge request."""
        return [self._pull(d) for d in self._list("listing merge requests", "/merge_requests", state="opened")]

    def check_runs(self, ref: str) -> list[CheckRun]:
        """The failed jobs of the commit's newest pipeline (jobs allowed to fail left out), as check runs."""
        pipelines = self._list("listing pipelines", "/pipelines", sha=ref, order_by="id", sort="desc")
        if not pipelines:
            return []
        newest = max(pipelines, key=lambda p: int(p["id"]))
        jobs = self._list("listing a pipeline's jobs", f"/pipelines/{int(newest['id'])}/jobs", **{"scope[]": "failed"})
        return [
            CheckRun(int(j["id"]), str(j.get("name") or ""), "failure", GITLAB_CI, str(j.get("failure_reason") or ""))
            for j in jobs
            if j.get("status") == "failed" and not j.get("allow_failure")
        ]

    def check_annotations(self, check_run_id: int) -> list[str]:
        """GitLab CI jobs have no annotations."""
        return []

    def job_log(self, job_id: int) -> str:
        """The end of a job's trace (its last TRACE_TAIL_BYTES, read no further than TRACE_READ_BYTES), with its
        ANSI colours and section markers stripped."""
        resp = self.forge.call(
            "reading a job's trace",
            lambda: self.forge.gl.http_get(f"{self._p}/jobs/{job_id}/trace", streamed=True, raw=True),
        )
        try:
            kept, left_out, whole = tail_of(resp.iter_content(64 << 10), TRACE_TAIL_BYTES, TRACE_READ_BYTES)
        except requests.RequestException as exc:
            raise GitLabError(f"reading a job's trace: {type(exc).__name__}") from None
        finally:
            resp.close()
        return clean_trace(log_text(kept, cut=left_out > 0, whole=whole))

    def get_review(self, pull: int, review_id: int) -> Review:
        """The review of the reviewer whose user id is `review_id`: their unresolved diff threads on the MR (a
        GitLab review is N diff notes plus the reviewer's state on the MR, not one object)."""
        found = self._list("reading the review's threads", self._noteable(pull) + "/discussions")
        comments, author = [], ""
        for discussion in found:
            notes = [n for n in discussion.get("notes") or [] if isinstance(n, dict)]
            first = notes[0] if notes else {}
            if (first.get("author") or {}).get("id") != review_id or first.get("system"):
                continue
            if not first.get("resolvable") or first.get("resolved"):
                continue
            author = self._author(first.get("author"))
            pos = first.get("position") or {}
            line = pos.get("new_line") or pos.get("old_line")
            body = "\n\n".join(str(n.get("body") or "") for n in notes if not n.get("system"))
            path = str(pos.get("new_path") or pos.get("old_path") or "")
            comments.append(ReviewComment(int(first["id"]), path, line if isinstance(line, int) else None, "", body))
        if not author:
            author = self._username(review_id)
        return Review(review_id, author, "changes_requested", "", tuple(comments))

    def _username(self, user_id: int) -> str:
        try:
            user = self.forge.call("reading a user", lambda: self.forge.gl.http_get(f"/users/{user_id}"))
        except GitLabError:
            return ""
        return str(user.get("username") or "")


def _draft(title: str) -> str:
    """The title with GitLab's draft prefix, once."""
    return title if DRAFT.match(title) else f"Draft: {title}"


def _closes(body: str) -> str:
    """GitLab's closing phrase for the description's first line (`Fixes #N` → `Closes #N`; both close on GitLab)."""
    return FIXES.sub(r"Closes #\1", body, count=1)
