"""GitLab webhook payloads and headers, shaped as GitLab's "Webhook events" documentation shows them.

Only the fields mini-fix reads are guaranteed, but each builder keeps GitLab's layout (`object_kind`, `user`,
`project`, `object_attributes`, `changes`, ...) and its quirks: every issue edit is `action: update` with the labels
in `changes.labels.previous/current`; a note's `noteable_id` is the global id (the iid is in `issue`/`merge_request`);
a Pipeline Hook per status change with `merge_request: null` for a branch pipeline; timestamps like
`2026-01-01 12:00:00 UTC`, not ISO 8601.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

TIMESTAMP = "2026-01-01 12:00:00 UTC"
SECRET = "test-gitlab-token-7c6b5a"
BOT = "project_7_bot_3f9a1c"  # a project access token's bot user, as GitLab names it
PROJECT_ID = 7


def _user(username: str, user_id: int = 1) -> dict[str, Any]:
    return {
        "id": user_id,
        "name": username.title(),
        "username": username,
        "avatar_url": f"https://gitlab.example.org/uploads/-/system/user/avatar/{user_id}/avatar.png",
        "email": "[REDACTED]",
    }


def _project(path: str, project_id: int = PROJECT_ID) -> dict[str, Any]:
    namespace, _, name = path.rpartition("/")
    return {
        "id": project_id,
        "name": name,
        "description": "",
        "web_url": f"https://gitlab.example.org/{path}",
        "avatar_url": None,
        "git_ssh_url": f"git@gitlab.example.org:{path}.git",
        "git_http_url": f"https://gitlab.example.org/{path}.git",
        "namespace": namespace.rsplit("/", 1)[-1],
        "visibility_level": 0,
        "path_with_namespace": path,
        "default_branch": "main",
        "ci_config_path": None,
        "homepage": f"https://gitlab.example.org/{path}",
        "url": f"git@gitlab.example.org:{path}.git",
        "ssh_url": f"git@gitlab.example.org:{path}.git",
        "http_url": f"https://gitlab.example.org/{path}.git",
    }


def _repository(path: str) -> dict[str, Any]:
    return {
        "name": path.rsplit("/", 1)[-1],
        "url": f"git@gitlab.example.org:{path}.git",
        "description": "",
        "homepage": f"https://gitlab.example.org/{path}",
    }


def _label(title: str, label_id: int) -> dict[str, Any]:
    return {
        "id": label_id,
        "title": title,
        "color": "#428BCA",
        "project_id": PROJECT_ID,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "template": False,
        "description": None,
        "type": "ProjectLabel",
        "group_id": None,
    }


def _labels(titles: list[str]) -> list[dict[str, Any]]:
    return [_label(title, 200 + n) for n, title in enumerate(titles)]


def _issue_attributes(iid: int, state: str, labels: list[str], action: str = "update") -> dict[str, Any]:
    return {
        "id": 30_000 + iid,  # the global id: not the iid a person sees
        "iid": iid,
        "title": f"Issue {iid}",
        "description": "Something is broken.",
        "state": state,
        "action": action,
        "author_id": 2,
        "project_id": PROJECT_ID,
        "confidential": False,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "labels": _labels(labels),
        "url": f"https://gitlab.example.org/issues/{iid}",
    }


def issue_hook(
    repo: str,
    iid: int,
    *,
    user: str = "alice",
    previous: list[str] | None = None,
    current: list[str] | None = None,
    action: str = "update",
    state: str = "opened",
) -> dict[str, Any]:
    """An `Issue Hook`: with `previous`/`current`, a label change (GitLab sends every edit as `action: update`)."""
    current_labels = current if current is not None else (previous or [])
    payload: dict[str, Any] = {
        "object_kind": "issue",
        "event_type": "issue",
        "user": _user(user, 2),
        "project": _project(repo),
        "object_attributes": _issue_attributes(iid, state, current_labels, action),
        "repository": _repository(repo),
        "assignees": [],
        "labels": _labels(current_labels),
        "changes": {"updated_at": {"previous": TIMESTAMP, "current": TIMESTAMP}},
    }
    if previous is not None or current is not None:
        payload["changes"]["labels"] = {"previous": _labels(previous or []), "current": _labels(current_labels)}
    return payload


def labeled(
    repo: str, iid: int, *, user: str = "alice", label: str = "mini-fix", had: list[str] | None = None
) -> dict[str, Any]:
    """The trigger label added to an issue that had the labels `had`."""
    before = had or []
    return issue_hook(repo, iid, user=user, previous=before, current=[*before, label])


def _mr_object(
    repo: str,
    iid: int,
    branch: str,
    *,
    state: str = "opened",
    source_project_id: int = PROJECT_ID,
    sha: str = "a1" * 20,
) -> dict[str, Any]:
    return {
        "id": 90_000 + iid,
        "iid": iid,
        "title": f"Draft: Fix #{iid}",
        "description": "Closes #1",
        "state": state,
        "draft": True,
        "source_branch": branch,
        "target_branch": "main",
        "source_project_id": source_project_id,
        "target_project_id": PROJECT_ID,
        "author_id": 9,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "merge_status": "can_be_merged",
        "detailed_merge_status": "mergeable",
        "last_commit": {
            "id": sha,
            "message": "Fix the bug\n",
            "timestamp": "2026-01-01T12:00:00+00:00",
            "author": {"name": BOT, "email": f"{BOT}@noreply.gitlab.example.org"},
        },
        "url": f"https://gitlab.example.org/{repo}/-/merge_requests/{iid}",
    }


def note_hook(
    repo: str,
    iid: int,
    body: str,
    *,
    on: str = "Issue",
    user: str = "alice",
    branch: str = "mini-fix/issue-1",
    diff: bool = False,
    system: bool = False,
    issue_state: str = "opened",
    note_id: int = 1244,
) -> dict[str, Any]:
    """A `Note Hook` on an Issue or a MergeRequest (`diff=True`: a DiffNote with its position, as a review's)."""
    attributes: dict[str, Any] = {
        "id": note_id,
        "note": body,
        "noteable_type": on,
        "author_id": 2,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "project_id": PROJECT_ID,
        "attachment": None,
        "line_code": None,
        "commit_id": "",
        "noteable_id": (30_000 if on == "Issue" else 90_000) + iid,  # the global id, never the iid
        "system": system,
        "st_diff": None,
        "action": "create",
        "type": None,
        "discussion_id": "6a9c1750b37d513a43987b574953fceb50b03ce7",
        "url": f"https://gitlab.example.org/{repo}/-/issues/{iid}#note_{note_id}",
    }
    if diff:
        attributes["type"] = "DiffNote"
        attributes["line_code"] = "d3c3a1f1_12_12"
        attributes["position"] = {
            "base_sha": "b0" * 20,
            "start_sha": "b0" * 20,
            "head_sha": "a1" * 20,
            "old_path": "src/app.py",
            "new_path": "src/app.py",
            "position_type": "text",
            "old_line": None,
            "new_line": 12,
            "line_range": None,
        }
    payload: dict[str, Any] = {
        "object_kind": "note",
        "event_type": "note",
        "user": _user(user, 2),
        "project_id": PROJECT_ID,
        "project": _project(repo),
        "object_attributes": attributes,
        "repository": _repository(repo),
    }
    if on == "Issue":
        payload["issue"] = _issue_attributes(iid, issue_state, [])
    elif on == "MergeRequest":
        payload["merge_request"] = _mr_object(repo, iid, branch)
    return payload


def merge_request_hook(
    repo: str,
    iid: int,
    *,
    action: str,
    user: str = "alice",
    branch: str = "mini-fix/issue-1",
    state: str | None = None,
    source_project_id: int = PROJECT_ID,
    reviewers: list[tuple[str, str]] | None = None,
    previous_reviewers: list[tuple[str, str]] | None = None,
    sha: str = "a1" * 20,
    oldrev: str | None = None,
) -> dict[str, Any]:
    """A `Merge Request Hook`: close, merge, reopen, update (a push: `oldrev`; a review: reviewers' states).

    `reviewers` are (username, state) pairs, state one of unreviewed, review_started, reviewed, requested_changes,
    approved, unapproved; with `previous_reviewers`, `changes.reviewers` says what the action changed."""
    states = {"close": "closed", "merge": "merged"}
    attributes = _mr_object(repo, iid, branch, state=state or states.get(action, "opened"), sha=sha)
    attributes.update(source_project_id=source_project_id, action=action)
    if oldrev is not None:
        attributes["oldrev"] = oldrev

    def people(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{**_user(name, 100 + n), "state": st, "re_requested": False} for n, (name, st) in enumerate(pairs)]

    payload: dict[str, Any] = {
        "object_kind": "merge_request",
        "event_type": "merge_request",
        "user": _user(user, 2),
        "project": _project(repo),
        "object_attributes": attributes,
        "labels": [],
        "changes": {"updated_at": {"previous": TIMESTAMP, "current": TIMESTAMP}},
        "repository": _repository(repo),
        "assignees": [],
        "reviewers": people(reviewers or []),
    }
    if previous_reviewers is not None:
        payload["changes"]["reviewers"] = {"previous": people(previous_reviewers), "current": people(reviewers or [])}
    return payload


def pipeline_hook(
    repo: str,
    *,
    status: str,
    mr_iid: int | None = 3,
    branch: str = "mini-fix/issue-1",
    user: str = BOT,
    sha: str = "a1" * 20,
    source_project_id: int = PROJECT_ID,
    mr_state: str = "opened",
    pipeline_id: int = 31,
) -> dict[str, Any]:
    """A `Pipeline Hook` (one per status change); `mr_iid=None`: a branch pipeline, whose `merge_request` is null."""
    merge_request = None
    if mr_iid is not None:
        merge_request = {
            "id": 90_000 + mr_iid,
            "iid": mr_iid,
            "title": f"Draft: Fix #{mr_iid}",
            "source_branch": branch,
            "source_project_id": source_project_id,
            "target_branch": "main",
            "target_project_id": PROJECT_ID,
            "state": mr_state,
            "merge_status": "can_be_merged",
            "detailed_merge_status": "mergeable",
            "url": f"https://gitlab.example.org/{repo}/-/merge_requests/{mr_iid}",
        }
    return {
        "object_kind": "pipeline",
        "object_attributes": {
            "id": pipeline_id,
            "iid": 3,
            "name": None,
            "ref": branch,
            "tag": False,
            "sha": sha,
            "before_sha": "0" * 40,
            "source": "merge_request_event" if mr_iid is not None else "push",
            "status": status,
            "detailed_status": status,
            "stages": ["test"],
            "created_at": TIMESTAMP,
            "finished_at": TIMESTAMP if status in ("failed", "success", "canceled") else None,
            "duration": 63,
            "queued_duration": None,
            "variables": [],
            "url": f"https://gitlab.example.org/{repo}/-/pipelines/{pipeline_id}",
        },
        "merge_request": merge_request,
        "user": _user(user, 9),
        "project": _project(repo),
        "commit": {
            "id": sha,
            "message": "Fix the bug\n",
            "title": "Fix the bug",
            "timestamp": "2026-01-01T12:00:00+00:00",
            "url": f"https://gitlab.example.org/{repo}/-/commit/{sha}",
            "author": {"name": BOT, "email": f"{BOT}@noreply.gitlab.example.org"},
        },
        "source_pipeline": None,
        "builds": [],
    }


EVENTS = {
    "issue": "Issue Hook",
    "note": "Note Hook",
    "merge_request": "Merge Request Hook",
    "pipeline": "Pipeline Hook",
}


def headers(
    payload: dict[str, Any],
    *,
    token: str | None = SECRET,
    event: str | None = None,
    event_uuid: str | None = None,
    idempotency_key: str | None = None,
) -> dict[str, str]:
    """The headers GitLab sends with a delivery (`event` defaults to the payload's `object_kind`'s hook)."""
    found = {
        "Content-Type": "application/json",
        "User-Agent": "GitLab/18.6.0",
        "X-Gitlab-Event": event or EVENTS[str(payload.get("object_kind"))],
        "X-Gitlab-Event-UUID": event_uuid or str(uuid.uuid4()),
        "X-Gitlab-Instance": "https://gitlab.example.org",
        "X-Gitlab-Webhook-UUID": "3d1b5c9e-5d0e-4f38-9a3c-5b1f3a4b2c1d",
    }
    if token is not None:
        found["X-Gitlab-Token"] = token
    if idempotency_key is not None:
        found["Idempotency-Key"] = idempotency_key
    return found


def body(payload: dict[str, Any]) -> bytes:
    """The JSON body as GitLab sends it."""
    return json.dumps(payload).encode()
