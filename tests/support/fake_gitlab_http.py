"""The HTTP side of FakeGitLab: /api/v4 routes over its state, and git smart HTTP through `git http-backend`."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult, parse_qs, unquote, urlencode

from tests.support.fake_forge import ForgeHandler, Reply, find_route

API = "/api/v4"
PROJECT = r"/projects/(?P<project>[^/]+)"
GIT = re.compile(r"^/(?P<project>.+?)\.git/(?:info/refs|git-upload-pack|git-receive-pack)$")
MAINTAINER, DEVELOPER = 40, 30


class GitLabHandler(ForgeHandler):
    """One request to FakeGitLab: REST under /api/v4 needs a known token (`PRIVATE-TOKEN` or Bearer); git needs
    `oauth2:<token>` as Basic auth."""

    git_path = GIT
    realm = "GitLab"
    git_fault_json = True

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _rest(self, method: str, url: SplitResult, body: bytes) -> None:
        if not url.path.startswith(API + "/"):
            return self._send(404, {"message": "404 Not Found"})
        user = self._user()
        if user is None:
            return self._send(401, {"message": "401 Unauthorized"})
        query = {k: v if k.endswith("[]") else v[-1] for k, v in parse_qs(url.query).items()}
        if (found := find_route(ROUTES, method, url.path[len(API) :])) is None:
            return self._send(404, {"message": "404 Not Found"})
        (_, _, handler), matched = found
        groups = {k: unquote(v) for k, v in matched.items()}
        if "project" in groups and (project := self._project(groups["project"])) is None:
            return self._send(404, {"message": "404 Project Not Found"})
        if "project" in groups:
            groups["project"] = project
        data = json.loads(body or b"null") if "json" in self.headers.get("Content-Type", "") else None
        if data is None and body:
            data = {k: v[-1] for k, v in parse_qs(body.decode()).items()}  # a form body
        status, answer = handler(self.forge, groups, query, data or {}, user)
        self._page(status, answer, url.path, query)

    def _project(self, ref: str) -> str | None:
        """A project by id or by its (URL-decoded) path."""
        if ref.isdigit():
            return next((p for p, d in self.forge.projects.items() if d["id"] == int(ref)), None)
        return ref if ref in self.forge.projects else None

    def _user(self) -> str | None:
        token = self.headers.get("PRIVATE-TOKEN") or ""
        scheme, _, bearer = (self.headers.get("Authorization") or "").partition(" ")
        if not token and scheme.lower() == "bearer":
            token = bearer
        name: str | None = self.forge.tokens.get(token)
        return name

    def _page(self, status: int, data: Any, path: str, query: dict[str, Any]) -> None:
        """A list is paged as GitLab pages (`page`, `per_page` up to 100; `Link: rel="next"`, `X-Next-Page`)."""
        if not isinstance(data, list):
            return self._send(status, data)
        per_page, page = min(int(query.get("per_page", 20)), 100), int(query.get("page", 1))
        chunk = data[(page - 1) * per_page : page * per_page]
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(data))}
        if page * per_page < len(data):
            nxt = urlencode({**{k: v for k, v in query.items() if not k.endswith("[]")}, "page": page + 1}) + "".join(
                f"&{k}={x}" for k, v in query.items() if k.endswith("[]") for x in v
            )
            headers |= {"X-Next-Page": str(page + 1), "Link": f'<{self.forge.base_url}{path}?{nxt}>; rel="next"'}
        self._send(status, chunk, headers)

    def _git(self, method: str, match: re.Match[str], url: SplitResult, body: bytes) -> None:
        """GitLab's git over HTTPS with a token: Basic auth, username `oauth2`, the token as password."""
        project = unquote(match["project"])
        basic = self._basic_auth()
        user: str | None = self.forge.tokens.get(basic[1]) if basic and basic[0] == "oauth2" else None
        if project not in self.forge.projects or user is None:
            return self._git_refuse(url.path)
        level = self.forge.access_level(project, self.forge.user_id(user))
        # the pusher's level is read by the pre-receive hook (branch protection)
        self._git_backend(method, url, body, user, FAKE_GITLAB_LEVEL=str(level))


# -- REST routes --------------------
Handler = Callable[[Any, dict[str, str], dict[str, Any], dict[str, Any], str], Reply]
NOT_FOUND: Reply = (404, {"message": "404 Not found"})


def _public(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not k.startswith("_") and k != "bare"}


def get_current_user(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    u = gl.users[user]
    return 200, {**gl._user(user), "bot": u["bot"], "public_email": "", "commit_email": f"{u['id']}-{user}@noreply"}


def list_users(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    name = q.get("username", "")
    return 200, [gl._user(name)] if name in gl.users else []


def get_user(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    name = next((n for n, u in gl.users.items() if u["id"] == int(g["user_id"])), None)
    return (200, gl._user(name)) if name else NOT_FOUND


def get_group_member_all(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    """A group's direct and inherited members (its ancestors'); 404 for anyone else."""
    level = gl.access_level(g["group"], int(g["user_id"]))
    if not level:
        return NOT_FOUND
    name = next(n for n, u in gl.users.items() if u["id"] == int(g["user_id"]))
    return 200, {**gl._user(name), "access_level": level}


def get_project(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    p = gl.projects[g["project"]]
    return 200, {
        **_public(p),
        "http_url_to_repo": f"{gl.base_url}/{p['path_with_namespace']}.git",
        "web_url": f"{gl.base_url}/{p['path_with_namespace']}",
    }


def get_member_all(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    """Direct, inherited and invited members; 404 for a user who is none of them."""
    uid = int(g["user_id"])
    level = gl.access_level(g["project"], uid)
    if not level:
        return 404, {"message": "404 Not found"}
    name = next(n for n, u in gl.users.items() if u["id"] == uid)
    return 200, {**gl._user(name), "access_level": level}


def get_member(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    """Direct members only: an inherited group member is a 404 here (why mini-fix asks `members/all`)."""
    level = gl.members.get((g["project"], int(g["user_id"])), 0)
    if not level:
        return 404, {"message": "404 Not found"}
    name = next(n for n, u in gl.users.items() if u["id"] == int(g["user_id"]))
    return 200, {**gl._user(name), "access_level": level}


def get_issue(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    issue = gl.issues.get((g["project"], int(g["iid"])))
    return (200, issue) if issue else NOT_FOUND


def _parent(gl: Any, g: dict[str, str]) -> dict[str, Any] | None:
    if g["kind"] == "issues":
        found: dict[str, Any] | None = gl.issues.get((g["project"], int(g["iid"])))
        return found
    return gl.mr(g["project"], int(g["iid"]))


def list_notes(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    if _parent(gl, g) is None:
        return NOT_FOUND
    found = [_public(n) for n in gl.notes_on(g["project"], int(g["iid"]), g["kind"])]
    if q.get("sort", "desc") == "desc":  # GitLab's default order: newest first
        found.reverse()
    return 200, found


def create_note(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    if _parent(gl, g) is None:
        return NOT_FOUND
    text = str(body.get("body") or "")
    if len(text) > 1_000_000:
        return 400, {"message": {"note": ["is too long (maximum is 1000000 characters)"]}}
    return 201, _public(gl.note(g["project"], g["kind"], int(g["iid"]), text, user))


def update_note(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    note = next((n for n in gl.notes if n["id"] == int(g["note_id"]) and n["_project"] == g["project"]), None)
    if note is None:
        return NOT_FOUND
    if note["author"]["username"] != user:
        return 403, {"message": "403 Forbidden"}
    note["body"] = str(body.get("body") or "")
    note["_edits"] += 1
    return 200, _public(note)


def award(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    if _parent(gl, g) is None:
        return NOT_FOUND
    name = str(body.get("name") or "")
    note = int(g["note_id"]) if g.get("note_id") else None
    key = (g["project"], g["kind"], int(g["iid"]), note, name, user)
    if any((a["_project"], a["_kind"], a["_iid"], a["_note"], a["name"], a["user"]["username"]) == key
           for a in gl.award_emoji):  # fmt: skip
        return 404, {"message": "404 Award Emoji Name has already been taken"}
    emoji = {"id": gl.next_id(), "name": name, "user": gl._user(user), "_project": g["project"], "_kind": g["kind"],
             "_iid": int(g["iid"]), "_note": note}  # fmt: skip
    gl.award_emoji.append(emoji)
    return 201, _public(emoji)


def _mr_view(gl: Any, mr: dict[str, Any], *, single: bool = False) -> dict[str, Any]:
    sha = gl.branch_head(mr["_project"], mr["source_branch"]) or ""
    view = {**_public(mr), "sha": sha, "draft": _is_draft(mr["title"]), "work_in_progress": _is_draft(mr["title"])}
    if single:
        pipes = [p for p in gl.pipelines if p["_project"] == mr["_project"] and p["sha"] == sha]
        view["head_pipeline"] = _public(max(pipes, key=lambda p: p["id"])) if pipes else None
    return view


def _is_draft(title: str) -> bool:
    """GitLab's draft title prefixes (case-insensitive): `Draft:`, `[Draft]`, `(Draft)`."""
    return re.match(r"(?i)\s*(?:draft:|\[draft\]|\(draft\))", title) is not None


def list_mrs(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    found = [m for m in gl.merge_requests if m["_project"] == g["project"]]
    if (state := q.get("state", "all")) != "all":
        found = [m for m in found if m["state"] == state]
    if "source_branch" in q:
        found = [m for m in found if m["source_branch"] == q["source_branch"]]
    return 200, [_mr_view(gl, m) for m in sorted(found, key=lambda m: -m["iid"])]


def create_mr(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    project = g["project"]
    source, target = str(body.get("source_branch") or ""), str(body.get("target_branch") or "")
    if not body.get("title") or not source or not target:
        return 400, {"message": "400 Bad request - title, source_branch, target_branch are missing"}
    if gl.branch_head(project, source) is None:
        return 422, {"message": [f'Source branch "{source}" does not exist']}
    if clash := next((m for m in gl.merge_requests if m["_project"] == project and m["source_branch"] == source
                      and m["state"] == "opened"), None):  # fmt: skip
        return 409, {"message": [f"Another open merge request already exists for this source branch: !{clash['iid']}"]}
    p = gl.projects[project]
    with gl.lock:
        iid = p["next_mr_iid"]
        p["next_mr_iid"] += 1
    mr = {
        "id": gl.next_id(),
        "iid": iid,
        "project_id": p["id"],
        "source_project_id": p["id"],
        "target_project_id": p["id"],
        "title": str(body["title"]),
        "description": str(body.get("description") or ""),
        "state": "opened",
        "source_branch": source,
        "target_branch": target,
        "author": gl._user(user),
        "web_url": f"{gl.base_url}/{project}/-/merge_requests/{iid}",
        "merged_at": None,
        "_project": project,
    }
    gl.merge_requests.append(mr)
    return 201, _mr_view(gl, mr)


def get_mr(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    mr = gl.mr(g["project"], int(g["iid"]))
    return (200, _mr_view(gl, mr, single=True)) if mr else NOT_FOUND


def update_mr(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    mr = gl.mr(g["project"], int(g["iid"]))
    if mr is None:
        return NOT_FOUND
    mr.update({k: str(body[k]) for k in ("title", "description") if k in body})
    return 200, _mr_view(gl, mr)


def list_discussions(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    if gl.mr(g["project"], int(g["iid"])) is None:
        return NOT_FOUND
    found = [d for d in gl.discussions if d["_project"] == g["project"] and d["_iid"] == int(g["iid"])]
    return 200, [{**_public(d), "notes": [_public(n) for n in d["notes"]]} for d in found]


def list_pipelines(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    found = [p for p in gl.pipelines if p["_project"] == g["project"]]
    for key in ("sha", "ref", "status"):
        if key in q:
            found = [p for p in found if p[key] == q[key]]
    return 200, [_public(p) for p in sorted(found, key=lambda p: -p["id"])]  # newest first, as GitLab orders


def list_pipeline_jobs(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    pipeline = next((p for p in gl.pipelines if p["_project"] == g["project"] and p["id"] == int(g["pid"])), None)
    if pipeline is None:
        return NOT_FOUND
    scopes = q.get("scope[]") or ([q["scope"]] if "scope" in q else [])
    jobs = [j for j in pipeline["_jobs"] if not scopes or j["status"] in scopes]
    return 200, [{**_public(j), "pipeline": {"id": pipeline["id"], "sha": pipeline["sha"]}} for j in jobs]


def get_trace(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    trace = gl.trace_of(int(g["job_id"]))
    return (200, trace) if trace is not None else NOT_FOUND


def raw_file(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    p = gl.projects[g["project"]]
    ref = q.get("ref") or p["default_branch"]
    proc = subprocess.run(["git", "--git-dir", str(p["bare"]), "show", f"{ref}:{g['file']}"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return (200, proc.stdout) if proc.returncode == 0 else (404, {"message": "404 File Not Found"})


def list_labels(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    return 200, list(gl.labels[g["project"]])


def create_label(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    if gl.access_level(g["project"], gl.user_id(user)) < DEVELOPER:  # Planner/Reporter and up: narrow it here
        return 403, {"message": "403 Forbidden"}
    labels = gl.labels[g["project"]]
    if any(lb["name"].casefold() == str(body.get("name", "")).casefold() for lb in labels):
        return 409, {"message": "Label already exists"}
    color = str(body.get("color") or "")
    label = {"id": gl.next_id(), "name": str(body.get("name")), "color": color if color.startswith("#") else None,
             "description": body.get("description")}  # fmt: skip
    if label["color"] is None:
        return 400, {"message": {"color": ["must be a valid color code"]}}
    labels.append(label)
    return 201, label


def list_protected(gl: Any, g: dict[str, str], q: dict[str, Any], body: Any, user: str) -> Reply:
    return 200, [
        {"id": n, "name": name, "push_access_levels": [{"access_level": MAINTAINER}], "allow_force_push": False}
        for n, name in enumerate(gl.protected_branches(g["project"]), 1)
    ]


NOTEABLE = PROJECT + r"/(?P<kind>issues|merge_requests)/(?P<iid>\d+)"
ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", "/user", get_current_user),
    ("GET", "/users", list_users),
    ("GET", r"/users/(?P<user_id>\d+)", get_user),
    ("GET", r"/groups/(?P<group>[^/]+)/members/all/(?P<user_id>\d+)", get_group_member_all),
    ("GET", PROJECT, get_project),
    ("GET", PROJECT + r"/members/all/(?P<user_id>\d+)", get_member_all),
    ("GET", PROJECT + r"/members/(?P<user_id>\d+)", get_member),
    ("GET", PROJECT + r"/issues/(?P<iid>\d+)", get_issue),
    ("GET", NOTEABLE + "/notes", list_notes),
    ("POST", NOTEABLE + "/notes", create_note),
    ("PUT", NOTEABLE + r"/notes/(?P<note_id>\d+)", update_note),
    ("POST", NOTEABLE + "/award_emoji", award),
    ("POST", NOTEABLE + r"/notes/(?P<note_id>\d+)/award_emoji", award),
    ("GET", PROJECT + "/merge_requests", list_mrs),
    ("POST", PROJECT + "/merge_requests", create_mr),
    ("GET", PROJECT + r"/merge_requests/(?P<iid>\d+)", get_mr),
    ("PUT", PROJECT + r"/merge_requests/(?P<iid>\d+)", update_mr),
    ("GET", PROJECT + r"/merge_requests/(?P<iid>\d+)/discussions", list_discussions),
    ("GET", PROJECT + "/pipelines", list_pipelines),
    ("GET", PROJECT + r"/pipelines/(?P<pid>\d+)/jobs", list_pipeline_jobs),
    ("GET", PROJECT + r"/jobs/(?P<job_id>\d+)/trace", get_trace),
    ("GET", PROJECT + r"/repository/files/(?P<file>[^/]+)/raw", raw_file),
    ("GET", PROJECT + "/labels", list_labels),
    ("POST", PROJECT + "/labels", create_label),
    ("GET", PROJECT + "/protected_branches", list_protected),
]
