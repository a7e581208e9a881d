"""Which forge a job belongs to, from the numbers it carries: a GitLab project's installation id and merge requests.

GitLab has no App installation; its unit of sharing is the top-level group (or user namespace). A GitLab job's
installation id is a negative number derived from that namespace's path: GitHub's installation ids are always
positive, so the sign alone says which forge a job belongs to, and fair share and quotas group a GitLab group's
projects together as they do an organisation's repositories."""

from __future__ import annotations

import hashlib


def installation_of(project_path: str) -> int:
    """The (negative, stable) installation id of a GitLab project `group/[sub/]project`: its top-level namespace."""
    top = project_path.strip("/").split("/", 1)[0].casefold()
    if not top:
        raise ValueError("a GitLab project path needs a namespace")
    digest = hashlib.blake2b(top.encode(), digest_size=6).digest()
    return -(int.from_bytes(digest, "big") or 1)


def is_gitlab(installation_id: int) -> bool:
    """Whether a job's installation id is a GitLab namespace's (see `installation_of`)."""
    return installation_id < 0


# Tables keyed by repository alone (a remembered trigger label, a kept review) hold both forges' rows: a GitLab
# project's path is stored there with this prefix (no GitHub or GitLab path contains a colon), so GitHub `acme/app`
# and a GitLab project `acme/app`, maybe of different owners, never share a row. A GitHub key stays `owner/name`.
GITLAB_KEY = "gitlab:"


def forge_key(repo: str, installation_id: int) -> str:
    """The key `repo` (or an owner's `owner/*`) of a job of `installation_id` goes by in a table keyed by repository."""
    return GITLAB_KEY + repo if is_gitlab(installation_id) else repo


def repo_of_key(key: str) -> str:
    """The repository a `forge_key` names."""
    return key.removeprefix(GITLAB_KEY)


# Issues and merge requests count their iids separately (issue #1 and MR !1 both exist), while a job and the gateway
# protocol name either by one number, as GitHub's shared issue/PR numbers do. A merge request's number is its iid
# lifted above every issue iid, so the number alone says which one a comment or a reaction goes to.
MR_BASE = 1_000_000_000


def mr_number(iid: int) -> int:
    """The number a merge request `!iid` goes by in jobs and the gateway."""
    return MR_BASE + iid


def is_mr(number: int) -> bool:
    """Whether a job's or the gateway's number names a merge request (else an issue)."""
    return number > MR_BASE


def iid_of(number: int) -> int:
    """The issue's or merge request's own iid."""
    return number - MR_BASE if is_mr(number) else number
