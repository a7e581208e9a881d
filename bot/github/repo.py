"""One repository's side of the App: the GitHubGateway over githubkit, authenticated as the installation."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from contextlib import ExitStack, nullcontext, suppress
from typing import Any

import httpx
from githubkit import GitHub
from githubkit.exception import RequestFailed

from bot.github.errors import status_of, translated
from bot.github.gateway import (
    BotIdentity,
    CheckRun,
    Comment,
    GitHubError,
    GitToken,
    Issue,
    PullRequest,
    RepoInfo,
    Review,
    ReviewComment,
)
from bot.github.pacing import WRITE_METHODS, WritePacer, creates_content

JOB_LOG_TAIL_BYTES = 1 << 20  # of an Actions log: its end says what failed
JOB_LOG_READ_BYTES = 64 << 20  # read at most, from a server that ignores the Range and sends the whole log
KNOWN_ROLES = ("admin", "maintain", "write", "triage", "read")
DRAFT_UNSUPPORTED = "draft pull requests are not supported"


def role_of(data: dict[str, Any]) -> str:
    """The precise role from a collaborator-permission answer; legacy `permission` says write for maintain."""
    role = str(data.get("role_name") or "")
    if role in KNOWN_ROLES:
        return role
    # A custom role: its base shows only through the legacy field.
    legacy = str(data.get("permission") or "none")
    return legacy if legacy in KNOWN_ROLES else "none"


def _pull(data: dict[str, Any]) -> PullRequest:
    return PullRequest(
        number=int(data["number"]),
        url=str(data.get("html_url") or ""),
        body=str(data.get("body") or ""),
        draft=bool(data.get("draft", False)),
        head=str((data.get("head") or {}).get("ref", "")),
        head_sha=str((data.get("head") or {}).get("sha", "")),
        state=str(data.get("state") or "open"),
        merged=data.get("merged") is True or bool(data.get("merged_at")),
        author=str((data.get("user") or {}).get("login") or ""),
        head_repo=str(((data.get("head") or {}).get("repo") or {}).get("full_name") or ""),
    )


def _comment(data: dict[str, Any], body: str) -> Comment:
    login = str((data.get("user") or {}).get("login", ""))
    return Comment(int(data["id"]), login, body, str(data.get("created_at") or ""))


def _review_body(data: dict[str, Any]) -> str:
    line = data.get("line") or data.get("original_line") or "?"
    return f"On `{data.get('path', '')}` line {line}:\n{data.get('body') or ''}"


class RepoGateway:
    """GitHubGateway for one repository, authenticated as the installation."""

    def __init__(
        self,
        github: GitHub[Any],
        owner: str,
        name: str,
        mint: Callable[[], GitToken],
        identity: Callable[[], BotIdentity],
        *,
        teams: Callable[[], GitHub[Any]] | None = None,
        pacer: WritePacer | None = None,
        checks: Callable[[], GitHub[Any]] | None = None,
    ) -> None:
        self._gh = github  # keep the GitHub object alive: its REST namespace does not hold it
        self._teams = teams or (lambda: github)
        self._checks = checks or (lambda: github)
        self.owner, self.name = owner, name
        self._mint, self._identity = mint, identity
        self._prefix = f"/repos/{owner}/{name}"
        self._pacer = pacer or WritePacer()  # the installation's, shared by its gateways (GitHubApp)

    def _json(self, what: str, method: str, path: str, **kwargs: Any) -> Any:
        turn = self._pacer.turn(creates_content(method)) if method in WRITE_METHODS else nullcontext()
        with translated(what), turn:
            resp = self._gh.request(method, self._prefix + path, **kwargs)
        return resp.json() if resp.raw_response.content else None

    def _later(self, what: str, method: str, path: str, **kwargs: Any) -> None:
        """A write whose answer nobody needs: in the installation's write order, without the caller waiting for
        its second (`WritePacer.later`); a failure is logged with `what`."""

        def send() -> None:
            with translated(what):
                self._gh.request(method, self._prefix + path, **kwargs)

        self._pacer.later(send, creates=creates_content(method))

    def permission(self, user: str) -> str:
        """The user's role: admin, maintain, write, triage, read or none."""
        try:
            data = self._json("reading a permission", "GET", f"/collaborators/{user}/permission")
        except GitHubError as exc:
            if isinstance(exc.__cause__, RequestFailed) and exc.__cause__.response.status_code == 404:
                return "none"
            raise
        return role_of(data)

    def get_issue(self, number: int) -> Issue:
        """One issue."""
        d = self._json("reading the issue", "GET", f"/issues/{number}")
        return Issue(
            int(d["number"]),
            str(d.get("title") or ""),
            str(d.get("body") or ""),
            str((d.get("user") or {}).get("login", "")),
            str(d.get("state", "open")),
            "pull_request" in d,
        )

    def list_comments(self, number: int) -> list[Comment]:
        """All comments on the issue, oldest first."""
        return [
            _comment(c, str(c.get("body") or "")) for c in self._pages("listing comments", f"/issues/{number}/comments")
        ]

    def list_review_comments(self, number: int) -> list[Comment]:
        """All review comments on the PR's diff, oldest first, each body prefixed with its file and line."""
        found = self._pages("listing review comments", f"/pulls/{number}/comments")
        return [_comment(c, _review_body(c)) for c in found]

    def _pages(self, what: str, path: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = self._json(what, "GET", path, params={"per_page": 100, "page": page})
            items += batch
            if len(batch) < 100:
                return items
            page += 1

    def add_reaction(self, number: int, content: str, *, comment_id: int | None = None) -> None:
        """React to the issue, or to one of its comments (sent in order; nobody waits for it)."""
        path = f"/issues/comments/{comment_id}/reactions" if comment_id else f"/issues/{number}/reactions"
        self._later("adding a reaction", "POST", path, json={"content": content})

    def create_comment(self, number: int, body: str) -> int:
        """Post a comment; return its id."""
        data = self._json("posting a comment", "POST", f"/issues/{number}/comments", json={"body": body})
        return int(data["id"])

    def post_comment(self, number: int, body: str) -> None:
        """Post a comment whose id nobody needs (sent in order; nobody waits for it)."""
        self._later("posting a comment", "POST", f"/issues/{number}/comments", json={"body": body})

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace a comment's body."""
        self._json("editing a comment", "PATCH", f"/issues/comments/{comment_id}", json={"body": body})

    def get_repo(self) -> RepoInfo:
        """Default branch, clone URL, visibility."""
        d = self._json("reading the repository", "GET", "")
        repo_id = d.get("id")
        return RepoInfo(
            str(d["full_name"]),
            str(d["default_branch"]),
            str(d["clone_url"]),
            bool(d["private"]),
            repo_id if isinstance(repo_id, int) and not isinstance(repo_id, bool) else None,
        )

    def find_open_pr(self, branch: str) -> PullRequest | None:
        """The open PR from `<owner>:<branch>` (GitHub ignores a head filter without the owner)."""
        params = {"head": f"{self.owner}:{branch}", "state": "open"}
        found = self._json("looking for the PR", "GET", "/pulls", params=params)
        return _pull(found[0]) if found else None

    def create_pr(self, *, title: str, body: str, head: str, base: str) -> PullRequest:
        """Open a draft PR, or a ready one where the plan has no drafts."""
        payload = {"title": title, "body": body, "head": head, "base": base, "draft": True}
        try:
            return _pull(self._json("opening the PR", "POST", "/pulls", json=payload))
        except GitHubError as exc:
            if DRAFT_UNSUPPORTED not in str(exc).lower():
                raise
        return _pull(self._json("opening the PR", "POST", "/pulls", json={**payload, "draft": False}))

    def update_pr(self, number: int, *, title: str, body: str) -> None:
        """Replace the PR's title and body."""
        self._json("updating the PR", "PATCH", f"/pulls/{number}", json={"title": title, "body": body})

    def get_pr(self, number: int) -> PullRequest:
        """One pull request."""
        return _pull(self._json("reading the PR", "GET", f"/pulls/{number}"))

    def git_token(self) -> str:
        """A fresh token for git, narrowed to this repository."""
        return self._mint().token

    def bot_identity(self) -> BotIdentity:
        """The App's bot user."""
        return self._identity()

    def read_file(self, path: str) -> str | None:
        """A file's text on the default branch (no `ref`); None when it or the repository is out of reach."""
        try:
            data = self._json("reading a file", "GET", f"/contents/{path}")
        except GitHubError as exc:
            if status_of(exc) in (404, 422):  # 422: this installation cannot mint a token for the repository
                return None
            raise
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        return base64.b64decode(str(data.get("content") or "")).decode("utf-8", "replace")

    def list_labels(self) -> list[str]:
        """The names of the repository's labels (every page)."""
        return [str(label["name"]) for label in self._pages("listing labels", "/labels")]

    def create_label(self, name: str, color: str, description: str) -> None:
        """Create a label; a 422 (`already_exists`: someone made it meanwhile) is not an error."""
        body = {"name": name, "color": color, "description": description}
        try:
            self._json("creating a label", "POST", "/labels", json=body)
        except GitHubError as exc:
            if status_of(exc) != 422:
                raise

    def team_member(self, team: str, user: str) -> bool:
        """Whether `user` is an active member of the owner organisation's team `team`."""
        client = self._teams()
        try:
            with translated("reading a team membership"):
                resp = client.request("GET", f"/orgs/{self.owner}/teams/{team}/memberships/{user}")
        except GitHubError as exc:
            if status_of(exc) == 404:
                return False
            raise
        return bool(resp.json().get("state") == "active")

    def git_credential(self) -> GitToken:
        """A fresh token for git, narrowed to this repository, with its expiry."""
        return self._mint()

    def list_open_prs(self) -> list[PullRequest]:
        """Every open pull request (every page)."""
        return [_pull(data) for data in self._pages("listing pull requests", "/pulls")]

    def _checks_json(self, what: str, path: str, **kwargs: Any) -> Any:
        with translated(what):
            return self._checks().request("GET", self._prefix + path, **kwargs).json()

    def check_runs(self, ref: str) -> list[CheckRun]:
        """The completed check runs of a commit (the first 100: enough to say what failed)."""
        params = {"filter": "latest", "status": "completed", "per_page": 100}
        data = self._checks_json("listing check runs", f"/commits/{ref}/check-runs", params=params)
        return [_check_run(r) for r in (data or {}).get("check_runs") or [] if isinstance(r, dict)]

    def check_annotations(self, check_run_id: int) -> list[str]:
        """A check run's annotations (the first 50), each as `path:line: level: message`."""
        found = self._checks_json(
            "reading annotations", f"/check-runs/{check_run_id}/annotations", params={"per_page": 50}
        )
        return [_annotation(a) for a in found or [] if isinstance(a, dict)]

    def job_log(self, job_id: int) -> str:
        """The end of an Actions job's log (its last JOB_LOG_TAIL_BYTES). GitHub answers 302 to a short-lived URL
        on another host; githubkit's client follows it, and httpx drops the Authorization header on a redirect to
        another origin. The tail is asked for with a Range; a server that sends the whole log instead is streamed,
        keeping only the tail and reading no more than JOB_LOG_READ_BYTES (a log is text its CI wrote: any size)."""
        what = "reading a job's log"
        github = self._checks()
        with ExitStack() as stack:
            with suppress(RuntimeError):  # already in githubkit's sync context: that client outlives the stream
                stack.enter_context(github)
            try:
                with translated(what):
                    resp = github.request(
                        "GET",
                        f"{self._prefix}/actions/jobs/{job_id}/logs",
                        headers={"Range": f"bytes=-{JOB_LOG_TAIL_BYTES}"},
                        stream=True,
                    )
            except GitHubError as exc:
                if status_of(exc) == 416:  # an empty log has no last bytes
                    return ""
                raise
            raw = resp.raw_response
            try:
                kept, left_out, whole = tail_of(raw.iter_bytes(), JOB_LOG_TAIL_BYTES, JOB_LOG_READ_BYTES)
            except httpx.HTTPError as exc:
                raise GitHubError(f"{what}: {type(exc).__name__}") from exc
            finally:
                raw.close()
        return log_text(kept, cut=left_out > 0 or _range_start(raw) > 0, whole=whole)

    def get_review(self, pull: int, review_id: int) -> Review:
        """One review with its inline comments (the first 100)."""
        base = f"/pulls/{pull}/reviews/{review_id}"
        data = self._json("reading a review", "GET", base)
        found = self._json("reading a review's comments", "GET", f"{base}/comments", params={"per_page": 100})
        comments = tuple(_review_comment(c) for c in found or [] if isinstance(c, dict))
        author = str((data.get("user") or {}).get("login", ""))
        state, body = str(data.get("state") or "").lower(), str(data.get("body") or "")
        return Review(int(data["id"]), author, state, body, comments)


def tail_of(chunks: Iterable[bytes], keep: int, limit: int) -> tuple[bytes, int, bool]:
    """The last `keep` bytes of a stream read up to `limit` bytes; how many bytes before them were left out; and
    whether the stream ended within the limit (False: the rest of it was never read)."""
    buffer, read = bytearray(), 0
    for chunk in chunks:
        read += len(chunk)
        buffer += chunk
        if len(buffer) > 2 * keep:
            del buffer[: len(buffer) - keep]
        if read >= limit:
            kept = bytes(buffer[-keep:])
            return kept, read - len(kept), False
    kept = bytes(buffer[-keep:])
    return kept, read - len(kept), True


def _range_start(resp: httpx.Response) -> int:
    """Where a 206's part starts in the whole (`Content-Range: bytes START-END/TOTAL`); 0 for a whole answer."""
    if resp.status_code != 206:
        return 0
    spec = resp.headers.get("content-range", "").removeprefix("bytes ").partition("-")[0]
    return int(spec) if spec.isdigit() else 1  # a part whose start is not said: not the start of the log


def log_text(data: bytes, *, cut: bool, whole: bool) -> str:
    """A log's kept bytes as text: when its start was cut, from its first whole line, after a note saying so."""
    text = data.decode("utf-8", "replace")
    if not cut:
        return text
    text = text.partition("\n")[2]
    more = "" if whole else f" (and it was not read past {JOB_LOG_READ_BYTES >> 20} MiB)"
    return f"[… the start of the log left out: mini-fix keeps its last {JOB_LOG_TAIL_BYTES >> 10} KiB{more}]\n{text}"


def _check_run(data: dict[str, Any]) -> CheckRun:
    output = data.get("output") or {}
    text = "\n\n".join(str(output.get(k) or "") for k in ("title", "summary", "text") if output.get(k))
    app = str((data.get("app") or {}).get("slug") or "")
    return CheckRun(int(data["id"]), str(data.get("name") or ""), str(data.get("conclusion") or ""), app, text)


def _annotation(data: dict[str, Any]) -> str:
    where = f"{data.get('path', '')}:{data.get('start_line', '?')}"
    return f"{where}: {data.get('annotation_level', '')}: {data.get('message', '')}"


def _review_comment(data: dict[str, Any]) -> ReviewComment:
    line = data.get("line") or data.get("original_line")
    return ReviewComment(
        int(data["id"]),
        str(data.get("path") or ""),
        line if isinstance(line, int) else None,
        str(data.get("diff_hunk") or ""),
        str(data.get("body") or ""),
    )
