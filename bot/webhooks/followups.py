"""What CI and review follow-ups share on the webhook path: the App's own PR and the follow-up's idempotency key."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, ignore

ISSUE_BRANCH = re.compile(r"mini-fix/issue-([1-9][0-9]{0,17})")


def issue_of_branch(ref: str | None) -> int | None:
    """The issue number of one of the App's branches (`mini-fix/issue-<N>`), else None."""
    match = ISSUE_BRANCH.fullmatch(ref or "")
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class AppPull:
    """A pull request the App opened: from its `mini-fix/issue-<N>` branch in the base repository itself."""

    installation_id: int
    repo: str
    pull: int
    issue: int


def app_pull(payload: Payload, pull: Any, branch: str | None) -> AppPull | Decision:
    """The App's PR a delivery is about (`pull` is one pull request object of the payload), or why not."""
    installation_id = dig_int(payload, "installation", "id")
    repo = dig_str(payload, "repository", "full_name")
    repo_id = dig_int(payload, "repository", "id")
    if installation_id is None or repo is None:
        return ignore("payload lacks installation.id or repository.full_name")
    issue = issue_of_branch(branch)
    if issue is None or not isinstance(pull, dict) or dig_str(pull, "head", "ref") != branch:
        return ignore("not a pull request from a mini-fix/issue-<N> branch")
    number = dig_int(pull, "number")
    # A fork may name its branch mini-fix/issue-N too: only the base repository's own branch is the App's.
    same_repo = dig_int(pull, "head", "repo", "id") == dig_int(pull, "base", "repo", "id") == repo_id
    if number is None or repo_id is None or not same_repo:
        return ignore("the pull request's branch is not in the base repository")
    return AppPull(installation_id, repo, number, issue)


def first_app_pull(payload: Payload, pulls: Any, branch: str | None) -> AppPull | Decision:
    """The first of a check suite's pull requests that is the App's own, or why there is none."""
    found: AppPull | Decision = ignore("the commit is on no pull request")
    for pull in pulls if isinstance(pulls, list) else []:
        found = app_pull(payload, pull, branch)
        if isinstance(found, AppPull):
            return found
    return found


def ci_key(repo: str, pull: int, sha: str) -> str:
    """The follow-up's delivery id: the ledger records one job per key, so one per failed head commit."""
    return f"ci:{repo}:{pull}:{sha}"


def review_key(repo: str, pull: int, review_id: int) -> str:
    """The follow-up's delivery id for one review (its body and each inline comment arrive separately)."""
    return f"review:{repo}:{pull}:{review_id}"


def is_bot(payload: Payload) -> bool:
    """Whether the sender is a GitHub App's bot user (`<slug>[bot]`, type Bot)."""
    login = dig_str(payload, "sender", "login") or ""
    return dig_str(payload, "sender", "type") == "Bot" and login.endswith("[bot]")


def committed_by_sender(payload: Payload, head_commit: Any) -> bool:
    """Whether the head commit's author and committer are both the sender (for CI, the App's bot user)."""
    login = dig_str(payload, "sender", "login")
    names = {dig(head_commit, "author", "name"), dig(head_commit, "committer", "name")}
    return login is not None and names == {login}
