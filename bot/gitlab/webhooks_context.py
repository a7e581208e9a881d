"""What every GitLab hook handler reads the same way: the project, the acting user, mini-fix's own merge requests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.forge_ids import installation_of, mr_number
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, ignore
from bot.webhooks.followups import issue_of_branch

# The users GitLab creates for project and group access tokens: `project_<id>_bot_<random>`, `group_<id>_bot_...`.
TOKEN_BOT = re.compile(r"(?:project|group)_[0-9]+_bot(?:_[0-9a-z]+)?", re.IGNORECASE)


def project_path(payload: Payload) -> str | None:
    """The project's `path_with_namespace` (a job's `repo`)."""
    path = dig_str(payload, "project", "path_with_namespace")
    return path if path and "/" in path.strip("/") else None


def username(payload: Payload) -> str | None:
    """Who acted: the hook's `user.username`."""
    return dig_str(payload, "user", "username")


def is_bot_user(name: str | None, settings: Settings) -> bool:
    """Whether a GitLab username is mini-fix's own (MINIFIX_GITLAB_BOT_USERNAME) or an access token's bot user.

    GitLab's hooks carry no user type: a bot is known by name. Its own notes and edits come back as hooks."""
    if not name:
        return False
    own = settings.gitlab_bot_username
    return (own is not None and name.casefold() == own.casefold()) or TOKEN_BOT.fullmatch(name) is not None


@dataclass(frozen=True)
class Project:
    """The project a hook is about, as a job names it."""

    installation_id: int
    repo: str
    project_id: int | None
    user: str


def project(payload: Payload) -> Project | Decision:
    """The hook's project and user, or why the hook cannot be read."""
    repo, user = project_path(payload), username(payload)
    if repo is None or user is None:
        return ignore("payload lacks project.path_with_namespace or user.username")
    return Project(installation_of(repo), repo, dig_int(payload, "project", "id"), user)


@dataclass(frozen=True)
class BotMergeRequest:
    """A merge request mini-fix opened: from its `mini-fix/issue-<iid>` branch in the project itself."""

    iid: int  # the MR's number in jobs and the gateway: `ids.mr_number(iid)`, apart from the issues' iids
    issue: int


def bot_merge_request(where: Project, mr: Any) -> BotMergeRequest | Decision:
    """The MR object of a hook (`object_attributes` or `merge_request`) as one of mini-fix's own, or why not."""
    branch = dig_str(mr, "source_branch") if isinstance(mr, dict) else None
    issue = issue_of_branch(branch)
    iid = dig_int(mr, "iid") if isinstance(mr, dict) else None
    if issue is None or iid is None:
        return ignore("not a merge request from a mini-fix/issue-<iid> branch")
    # A fork may name its branch mini-fix/issue-N too: only the project's own branch is mini-fix's.
    source, target = dig(mr, "source_project_id"), dig(mr, "target_project_id")
    if where.project_id is None or not source == target == where.project_id:
        return ignore("the merge request's source branch is not in the project (a fork's)")
    return BotMergeRequest(mr_number(iid), issue)
