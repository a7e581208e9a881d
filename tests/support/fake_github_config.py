"""FakeGitHub routes for what installations and repository configs need: file contents, labels, team memberships."""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
Reply = tuple[int, Any]
NOT_FOUND: Reply = (404, {"message": "Not Found"})


def get_contents(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = gh.repos.get(f"{g['owner']}/{g['name']}")
    if repo is None:
        return NOT_FOUND
    ref = q.get("ref") or repo["default_branch"]
    proc = subprocess.run(
        ["git", "--git-dir", str(repo["bare"]), "show", f"{ref}:{g['path']}"], capture_output=True, check=False
    )
    if proc.returncode != 0:
        return NOT_FOUND
    content = base64.b64encode(proc.stdout).decode()
    return 200, {"type": "file", "encoding": "base64", "path": g["path"], "content": content}


def list_labels(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    found = gh.labels.get(f"{g['owner']}/{g['name']}", [])
    per_page, page = int(q.get("per_page", 30)), int(q.get("page", 1))
    return 200, found[(page - 1) * per_page : page * per_page]


def create_label(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    labels = gh.labels.setdefault(f"{g['owner']}/{g['name']}", [])
    if any(label["name"].casefold() == body["name"].casefold() for label in labels):
        errors = [{"resource": "Label", "code": "already_exists", "field": "name"}]
        return 422, {"message": "Validation Failed", "errors": errors}
    label = {"name": body["name"], "color": body.get("color", ""), "description": body.get("description", "")}
    labels.append(label)
    return 201, label


def get_membership(gh: Any, g: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    if g["user"] not in gh.teams.get((g["org"], g["team"]), set()):
        return NOT_FOUND
    return 200, {"state": "active", "role": "member"}


ROUTES: list[tuple[str, str, Any, str]] = [
    ("GET", REPO + r"/contents/(?P<path>.+)", get_contents, "repo"),
    ("GET", REPO + r"/labels", list_labels, "repo"),
    ("POST", REPO + r"/labels", create_label, "repo"),
    ("GET", r"/orgs/(?P<org>[^/]+)/teams/(?P<team>[^/]+)/memberships/(?P<user>[^/]+)", get_membership, "any"),
]


def commit_files(gh: Any, repo: str, files: dict[str, str], branch: str | None = None) -> None:
    """Commit `files` on `branch` of a fake repository (a new branch starts from the default one)."""
    info = gh.repos[repo]
    branch = branch or info["default_branch"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _git(["clone", "-q", str(info["bare"]), str(work)])
        _git(["-C", str(work), "checkout", "-q", "-B", branch])
        for path, text in files.items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(text)
        _git(["-C", str(work), "add", "-A"])
        _git(["-C", str(work), "-c", "user.name=Seed", "-c", "user.email=seed@example.com", "commit", "-qm", "Edit"])
        _git(["-C", str(work), "push", "-q", "origin", f"HEAD:refs/heads/{branch}"])


def _git(args: list[str]) -> None:
    subprocess.run(["git", *args], capture_output=True, check=True, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
