"""The GitHub seam: what one job needs from GitHub, for one repository (`bot.github` implements it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

WRITE_ROLES = frozenset({"write", "maintain", "admin"})


class GitHubError(Exception):
    """A GitHub call failed; the message is fit for logs (no tokens, no request bodies)."""


class RateLimited(GitHubError):
    """GitHub's rate limit outlasted one request's bounded retries; `retry_after`: seconds GitHub asked to wait."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Issue:
    """An issue (or a pull request seen through the issues API)."""

    number: int
    title: str
    body: str
    author: str
    state: str = "open"
    is_pull_request: bool = False


@dataclass(frozen=True)
class Comment:
    """An issue comment."""

    id: int
    author: str
    body: str
    created_at: str = ""


@dataclass(frozen=True)
class RepoInfo:
    """What a job needs to know about the repository."""

    full_name: str
    default_branch: str
    clone_url: str
    private: bool
    id: int | None = None  # GitHub's repository id: stays with the repository through renames, never reused


@dataclass(frozen=True)
class PullRequest:
    """A pull request (open, or just opened, unless `state` says otherwise)."""

    number: int
    url: str
    body: str
    draft: bool
    head: str = ""
    head_sha: str = ""
    state: str = "open"  # open | closed
    merged: bool = False
    author: str = ""  # the login that opened it
    head_repo: str = ""  # owner/name the head branch lives in (a fork's; empty when that repository is gone)


@dataclass(frozen=True)
class CheckRun:
    """A completed check run of a commit, with what it reported (untrusted: the repository's CI wrote it)."""

    id: int
    name: str
    conclusion: str
    app: str  # the slug of the App that ran it: `github-actions` for a workflow job (whose id is the run's)
    output: str  # the run's output title, summary and text


@dataclass(frozen=True)
class ReviewComment:
    """One inline comment of a review: where, on which lines of the diff, and what it says."""

    id: int
    path: str
    line: int | None
    diff_hunk: str
    body: str


@dataclass(frozen=True)
class Review:
    """A pull request review with its inline comments."""

    id: int
    author: str
    state: str
    body: str
    comments: tuple[ReviewComment, ...] = ()


@dataclass(frozen=True)
class GitToken:
    """An installation token for git and when it stops working (seconds since the epoch)."""

    token: str
    expires_at: float


class GitUserToken(str):
    """A git token sent under a username of its own (GitLab's `oauth2`) instead of GitHub's `x-access-token`."""

    username: str

    def __new__(cls, token: str, username: str) -> GitUserToken:
        made = super().__new__(cls, token)
        made.username = username
        return made


def git_username(token: str) -> str:
    """The HTTP Basic username git sends with `token`."""
    return token.username if isinstance(token, GitUserToken) else "x-access-token"


@dataclass(frozen=True)
class BotIdentity:
    """The App's bot user, as git author and committer."""

    name: str
    email: str


class GitHubGateway(Protocol):
    """GitHub operations on one repository, authenticated as the App's installation."""

    def permission(self, user: str) -> str:
        """The user's role on the repository: admin, maintain, write, triage, read or none."""
        ...

    def get_issue(self, number: int) -> Issue:
        """One issue (or pull request, seen as an issue)."""
        ...

    def list_comments(self, number: int) -> list[Comment]:
        """Every comment on an issue, oldest first."""
        ...

    def list_review_comments(self, number: int) -> list[Comment]:
        """Every review comment on a pull request's diff, oldest first (body prefixed with its file and line)."""
        ...

    def add_reaction(self, number: int, content: str, *, comment_id: int | None = None) -> None:
        """React to an issue, or to one of its comments; sent in the installation's write order without the caller
        waiting for it (a failure is logged, not raised)."""
        ...

    def create_comment(self, number: int, body: str) -> int:
        """Post a comment on an issue or PR; return its id."""
        ...

    def post_comment(self, number: int, body: str) -> None:
        """Post a comment whose id nobody needs, like `add_reaction`: in order, nobody waiting (failure logged)."""
        ...

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace a comment's body."""
        ...

    def get_repo(self) -> RepoInfo:
        """The repository's default branch, clone URL and visibility."""
        ...

    def find_open_pr(self, branch: str) -> PullRequest | None:
        """The open PR whose head is `<owner>:<branch>`, if any."""
        ...

    def create_pr(self, *, title: str, body: str, head: str, base: str) -> PullRequest:
        """Open a draft PR (a ready one where drafts are unavailable; `draft` says which)."""
        ...

    def update_pr(self, number: int, *, title: str, body: str) -> None:
        """Replace a PR's title and body."""
        ...

    def get_pr(self, number: int) -> PullRequest:
        """One pull request."""
        ...

    def git_token(self) -> str:
        """A fresh installation token for git over HTTPS, narrowed to this repository."""
        ...

    def bot_identity(self) -> BotIdentity:
        """The App's bot user (`<slug>[bot]` and its noreply email)."""
        ...

    def read_file(self, path: str) -> str | None:
        """A file's text on the default branch; None when it (or access to the repository) is missing."""
        ...

    def list_labels(self) -> list[str]:
        """The names of the repository's labels."""
        ...

    def create_label(self, name: str, color: str, description: str) -> None:
        """Create a label (one that already exists is left alone)."""
        ...

    def team_member(self, team: str, user: str) -> bool:
        """Whether `user` is an active member of team `team` (a slug) of the owner organisation."""
        ...

    def git_credential(self) -> GitToken:
        """A new installation token for git, narrowed to this repository, with its expiry."""
        ...

    def list_open_prs(self) -> list[PullRequest]:
        """Every open pull request of the repository (each with its head branch and body)."""
        ...

    def check_runs(self, ref: str) -> list[CheckRun]:
        """The completed check runs of a commit (needs `checks: read`)."""
        ...

    def check_annotations(self, check_run_id: int) -> list[str]:
        """A check run's annotations, each as `path:line: level: message` (needs `checks: read`)."""
        ...

    def job_log(self, job_id: int) -> str:
        """A GitHub Actions job's log (needs `actions: read`; GitHub answers with a redirect to a short-lived URL)."""
        ...

    def get_review(self, pull: int, review_id: int) -> Review:
        """One review of a pull request, with its inline comments."""
        ...


def can_write(role: str) -> bool:
    """Whether a collaborator role may trigger runs."""
    return role in WRITE_ROLES
