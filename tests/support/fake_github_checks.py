"""FakeGitHub's CI and review side: check runs with annotations, Actions job logs (a 302 to a short-lived URL),
reviews with inline comments; and the webhook payloads GitHub sends about them, built from the vendored examples."""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.webhooks import example

REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
Reply = tuple[int, Any]
NOT_FOUND: Reply = (404, {"message": "Not Found"})
FORBIDDEN: Reply = (403, {"message": "Resource not accessible by integration"})
BOT = "mini-fix-test[bot]"
BOT_EMAIL = f"4242+{BOT}@users.noreply.github.com"


@dataclass
class ChecksState:
    """What the fake knows about CI and reviews; tests seed it."""

    check_runs: list[dict[str, Any]] = field(default_factory=list)  # each with repo and head_sha
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    job_logs: dict[int, str] = field(default_factory=dict)  # job id -> log text
    log_urls: dict[str, int] = field(default_factory=dict)  # one-time signature -> job id
    reviews: list[dict[str, Any]] = field(default_factory=list)  # each with repo and pull
    review_comments: list[dict[str, Any]] = field(default_factory=list)  # each with its pull_request_review_id

    def fail(self, repo: str, sha: str, name: str, *, log: str, output: str = "", annotation: str = "") -> int:
        """A failed GitHub Actions check run on `sha`, its job log and an annotation; returns its id."""
        run_id = 5000 + len(self.check_runs)
        self.check_runs.append(
            {"id": run_id, "repo": repo, "head_sha": sha, "name": name, "status": "completed",
             "conclusion": "failure", "app": {"slug": "github-actions"},
             "output": {"title": f"{name} failed", "summary": output, "text": None}}
        )  # fmt: skip
        self.job_logs[run_id] = log
        if annotation:
            self.annotations[run_id] = [
                {"path": "calc.py", "start_line": 2, "annotation_level": "failure", "message": annotation}
            ]
        return run_id

    def review(self, repo: str, pull: int, user: str, state: str, body: str, comments: list[dict[str, Any]]) -> int:
        """A submitted review with inline comments (path, line, diff_hunk, body); returns its id."""
        review_id = 7000 + len(self.reviews)
        self.reviews.append({"id": review_id, "repo": repo, "pull": pull, "user": {"login": user},
                             "state": state.upper(), "body": body})  # fmt: skip
        for c in comments:
            cid = 8000 + len(self.review_comments)
            self.review_comments.append({**c, "id": cid, "pull_request_review_id": review_id, "user": {"login": user}})
        return review_id


def _grant(gh: Any, headers: Any) -> dict[str, Any]:
    _, _, token = (headers.get("Authorization") or "").partition(" ")
    grant: dict[str, Any] = gh.tokens.get(token) or {}
    return grant.get("permissions") or {}


def list_check_runs(gh: Any, g: dict[str, str], q: dict[str, str], body: Any, headers: Any) -> Reply:
    if "checks" not in _grant(gh, headers):  # GitHub: a token without `checks` gets a 403
        return FORBIDDEN
    repo = f"{g['owner']}/{g['name']}"
    runs = [r for r in gh.checks.check_runs if r["repo"] == repo and r["head_sha"] == g["ref"]]
    return 200, {"total_count": len(runs), "check_runs": runs}


def list_annotations(gh: Any, g: dict[str, str], q: dict[str, str], body: Any, headers: Any) -> Reply:
    if "checks" not in _grant(gh, headers):
        return FORBIDDEN
    return 200, gh.checks.annotations.get(int(g["id"]), [])


def job_logs(gh: Any, g: dict[str, str], q: dict[str, str], body: Any, headers: Any) -> Reply:
    if "actions" not in _grant(gh, headers):
        return FORBIDDEN
    if int(g["id"]) not in gh.checks.job_logs:
        return NOT_FOUND
    signature = secrets.token_hex(8)
    gh.checks.log_urls[signature] = int(g["id"])
    return 302, {"location": f"{gh.base_url}/_blob/logs/{signature}"}


def log_blob(gh: Any, g: dict[str, str], q: dict[str, str], body: Any, headers: Any) -> Reply:
    job_id = gh.checks.log_urls.pop(g["signature"], None)  # short-lived: one use
    return (200, gh.checks.job_logs[job_id]) if job_id is not None else NOT_FOUND


def get_review(gh: Any, g: dict[str, str], q: dict[str, str], body: Any, headers: Any) -> Reply:
    repo = f"{g['owner']}/{g['name']}"
    found = [r for r in gh.checks.reviews if r["repo"] == repo and r["id"] == int(g["id"])]
    return (200, found[0]) if found else NOT_FOUND


def review_comments(gh: Any, g: dict[str, str], q: dict[str, str], body: Any, headers: Any) -> Reply:
    return 200, [c for c in gh.checks.review_comments if c["pull_request_review_id"] == int(g["id"])]


# (method, pattern, handler, auth): handlers here also get the request's headers (the token's permissions).
ROUTES: list[tuple[str, str, Any, str]] = [
    ("GET", REPO + r"/commits/(?P<ref>[0-9a-f]{40})/check-runs", list_check_runs, "repo"),
    ("GET", REPO + r"/check-runs/(?P<id>\d+)/annotations", list_annotations, "repo"),
    ("GET", REPO + r"/actions/jobs/(?P<id>\d+)/logs", job_logs, "repo"),
    ("GET", r"/_blob/logs/(?P<signature>[0-9a-f]+)", log_blob, "none"),
    ("GET", REPO + r"/pulls/(?P<number>\d+)/reviews/(?P<id>\d+)", get_review, "repo"),
    ("GET", REPO + r"/pulls/(?P<number>\d+)/reviews/(?P<id>\d+)/comments", review_comments, "repo"),
]


def bot_commit(gh: Any, repo: str, branch: str, files: dict[str, str], message: str) -> str:
    """Push a commit by the App's bot user onto `branch` (from the default branch); returns its sha."""
    bare = gh.repos[repo]["bare"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _git("clone", "-q", "-b", gh.repos[repo]["default_branch"], str(bare), str(work))
        for path, text in files.items():
            (work / path).write_text(text)
        ident = ["-c", f"user.name={BOT}", "-c", f"user.email={BOT_EMAIL}"]
        _git("-C", str(work), *ident, "commit", "-qam", message)
        _git("-C", str(work), "push", "-qf", "origin", f"HEAD:refs/heads/{branch}")
    return str(gh.branch_head(repo, branch))


def open_bot_pr(gh: Any, repo: str, issue: int, files: dict[str, str]) -> dict[str, Any]:
    """The state after a fix run: the bot's commit on `mini-fix/issue-<N>` and its open draft PR."""
    branch = f"mini-fix/issue-{issue}"
    bot_commit(gh, repo, branch, files, f"mini-fix: fix #{issue}")
    number = gh._next_number(repo)
    pull = {"number": number, "repo": repo, "title": f"Fix #{issue}", "body": f"Fixes #{issue}", "draft": True,
            "state": "open", "head": {"ref": branch}, "base": {"ref": gh.repos[repo]["default_branch"]},
            "html_url": f"{gh.base_url}/{repo}/pull/{number}"}  # fmt: skip
    gh.pulls.append(pull)
    gh.issues[(repo, number)] = {"number": number, "title": pull["title"], "body": pull["body"], "state": "open",
                                 "user": {"login": BOT}, "pull_request": {}}  # fmt: skip
    return pull


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


# -- deliveries --------------------


def _ours(payload: dict[str, Any], repo: str, installation: int) -> dict[str, Any]:
    owner, name = repo.split("/")
    payload["installation"] = {"id": installation}
    payload["repository"].update(full_name=repo, name=name, id=1)
    payload["repository"]["owner"]["login"] = owner
    return payload


def _pulls(pull: int, branch: str, sha: str) -> list[dict[str, Any]]:
    return [{"number": pull, "head": {"ref": branch, "sha": sha, "repo": {"id": 1}},
             "base": {"ref": "main", "repo": {"id": 1}}}]  # fmt: skip


def suite_completed(
    repo: str, pull: int, branch: str, sha: str, *, n: int = 0, installation: int = 1
) -> dict[str, Any]:
    """`check_suite.completed` with a failure on the bot's commit, sent by the bot (as GitHub does)."""
    payload = _ours(example("check_suite", "completed"), repo, installation)
    head = {"id": sha, "author": {"name": BOT, "email": BOT_EMAIL}, "committer": {"name": BOT, "email": BOT_EMAIL}}
    payload["check_suite"].update(
        id=90_000 + n, conclusion="failure", head_branch=branch, head_sha=sha, head_commit=head,
        pull_requests=_pulls(pull, branch, sha),
    )  # fmt: skip
    payload["sender"] = {"login": BOT, "type": "Bot"}
    return payload


def workflow_run_completed(repo: str, pull: int, branch: str, sha: str, *, installation: int = 1) -> dict[str, Any]:
    """`workflow_run.completed` with a failure: the Actions side of the same suite."""
    payload = _ours(example("workflow_run", "completed"), repo, installation)
    head = {"id": sha, "author": {"name": BOT}, "committer": {"name": BOT}}
    payload["workflow_run"].update(
        conclusion="failure", head_branch=branch, head_sha=sha, head_commit=head,
        pull_requests=_pulls(pull, branch, sha),
    )  # fmt: skip
    payload["sender"] = {"login": BOT, "type": "Bot"}
    return payload


def check_run_completed(repo: str, sha: str, *, installation: int = 1) -> dict[str, Any]:
    """`check_run.completed` with a failure (one run of the suite)."""
    payload = _ours(example("check_run", "completed"), repo, installation)
    payload["check_run"].update(conclusion="failure", head_sha=sha)
    payload["sender"] = {"login": BOT, "type": "Bot"}
    return payload


def _on_pull(event: str, repo: str, pull: int, branch: str, sender: str, installation: int) -> dict[str, Any]:
    """A documented pull request event, moved onto the App's PR `pull` (head `branch`) and sent by `sender`."""
    payload = _ours(example(*event.split(".")), repo, installation)
    payload["pull_request"].update(number=pull)
    payload["pull_request"]["head"].update(ref=branch)
    for side in ("head", "base"):
        payload["pull_request"][side]["repo"]["id"] = 1
    payload["sender"] = {"login": sender, "type": "User"}
    return payload


def review_submitted(repo: str, pull: int, branch: str, review_id: int, *, sender: str, installation: int = 1
                     ) -> dict[str, Any]:  # fmt: skip
    """`pull_request_review.submitted`, changes requested, on the App's PR."""
    payload = _on_pull("pull_request_review.submitted", repo, pull, branch, sender, installation)
    payload["review"].update(id=review_id, state="changes_requested")
    return payload


def review_comment_created(repo: str, pull: int, branch: str, review_id: int, *, sender: str, installation: int = 1
                           ) -> dict[str, Any]:  # fmt: skip
    """`pull_request_review_comment.created` for one inline comment of a review."""
    payload = _on_pull("pull_request_review_comment.created", repo, pull, branch, sender, installation)
    payload["comment"].update(pull_request_review_id=review_id)
    return payload
