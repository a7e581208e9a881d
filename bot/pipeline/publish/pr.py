"""A run's change, published: commit, push the branch, open or update the PR, attach the trajectory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.agent.loop import AgentResult
from bot.github.gateway import GitHubGateway, Issue, PullRequest, can_write
from bot.jobs import JobKind, Outcome, RunInfo
from bot.pipeline.attempts import exits
from bot.pipeline.attempts.execute import git_failure
from bot.pipeline.errors import RunFailed
from bot.pipeline.git import gitops
from bot.pipeline.publish import branch
from bot.pipeline.publish.checks import checks_from_steps, untrusted_summary
from bot.pipeline.publish.transcript import render_trajectory, steps_from_messages
from bot.render import diffstat, fit, render


@dataclass(frozen=True)
class Published:
    """Where the change went."""

    pr: PullRequest
    created: bool
    draft_fallback: bool


def push_change(
    gh: GitHubGateway,
    checkout: Path,
    diff: str,
    *,
    issue: Issue,
    run_id: str,
    token: gitops.Token,
    start: branch.Start,
    kind: JobKind,
) -> branch.Pushed:
    """Apply the diff to the worker's checkout, commit it as the bot user on top of where the job started, push it
    with a lease (branch.push)."""
    identity = gh.bot_identity()
    try:
        gitops.apply_diff(checkout, diff)
        gitops.commit(checkout, identity, render("commit_message.md", issue=issue, run={"run_id": run_id}))
        pushed = branch.push(checkout, token, start, kind=kind, identity=identity, run_id=run_id)
    except gitops.GitError as exc:
        raise RunFailed(Outcome.PUSH_FAILED, git_failure(exc)) from exc
    return pushed  # where it went, for the notes: `push_notes`


def push_notes(pushed: branch.Pushed, start: branch.Start, number: int) -> list[str]:
    """What the status comment and the PR body say about where the commit went."""
    notes = []
    if pushed.diverted:
        notes.append(
            f"`{start.branch}` changed while this run worked (someone pushed to it), so it was not overwritten: "
            f"this run's commit is on the new branch `{pushed.branch}`, proposed as a pull request into "
            f"`{start.branch}`. Merge it there, or comment `/agent retry` to run again on top of the branch "
            "as it is now."
        )
    if pushed.conflicts:
        notes.append(
            f"`{start.default_branch}` moved while this run worked and this change conflicts with its current head "
            f"(it is based on the earlier one). Resolve the conflict on `{pushed.branch}`, or comment "
            f"`/agent retry --fresh` to start over from the current `{start.default_branch}`."
        )
    elif pushed.base_moved:
        notes.append(f"`{start.default_branch}` moved while this run worked: the change was rebased onto its new head.")
    return notes


def open_or_update_pr(
    gh: GitHubGateway,
    *,
    issue: Issue,
    base: str,
    body_vars: dict[str, Any],
    head: str | None = None,
    title: str | None = None,
) -> Published:
    """Update the issue's open PR, or open a draft one from `head` (the issue's branch by default); never a second
    PR for the same branch. The title is the issue's unless given (`[WIP] ...`)."""
    branch = head or gitops.branch_name(issue.number)
    title = title or issue.title
    existing = gh.find_open_pr(branch)
    if existing is not None:
        gh.update_pr(existing.number, title=title, body=_body(body_vars, draft_fallback=not existing.draft))
        return Published(existing, created=False, draft_fallback=not existing.draft)
    pr = gh.create_pr(title=title, body=_body(body_vars, draft_fallback=False), head=branch, base=base)
    if not pr.draft:  # drafts unavailable here: say so in the body
        gh.update_pr(pr.number, title=title, body=_body(body_vars, draft_fallback=True))
    return Published(pr, created=True, draft_fallback=not pr.draft)


_CLOSES = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:(?P<repo>[\w.-]+/[\w.-]+)#|https?://\S+?/(?P<url>[\w.-]+/[\w.-]+)"
    r"/issues/|#)(?P<number>\d+)\b",
    re.IGNORECASE,
)


def closes(body: str, number: int, repo: str) -> bool:
    """Whether a PR body closes issue `number` of `repo` with a closing keyword (`Fixes #N`, `closes o/r#N`, a URL)."""
    for match in _CLOSES.finditer(body):
        named = match.group("repo") or match.group("url")
        if int(match.group("number")) == number and (named is None or named.lower() == repo.lower()):
            return True
    return False


def duplicate_pr(gh: GitHubGateway, *, number: int, repo: str, branch: str) -> PullRequest | None:
    """Another open PR (a person's or from another branch) that already fixes the issue, when the issue's own
    branch has no open PR to update; None otherwise.

    Only a PR whose head branch is in the repository itself or whose author can write to it counts: anyone can
    open a fork PR that says `Fixes #N`, and such a PR must not stop the App from publishing."""
    if gh.find_open_pr(branch) is not None:
        return None
    roles: dict[str, str] = {}

    def trusted(pr: PullRequest) -> bool:
        if pr.head_repo and pr.head_repo.lower() == repo.lower():
            return True  # only a writer can push a branch to the repository itself
        if not pr.author:
            return False
        if pr.author not in roles:
            roles[pr.author] = gh.permission(pr.author)
        return can_write(roles[pr.author])

    others = (pr for pr in gh.list_open_prs() if pr.head != branch and closes(pr.body, number, repo))
    return next((pr for pr in others if trusted(pr)), None)


WIP_PREFIX = "[WIP] "


def wip_note(limit: str) -> str:
    """What the status comment and the PR body say about a change published when a limit ended its run: one of the
    agent's own (`exits.LIMIT_NAMES`), or the job's token budget or a quota, by its stop reason."""
    if limit not in exits.LIMIT_NAMES.values():
        return (
            f"Incomplete: the run was stopped before the agent finished: {limit}. This is the work it had done by "
            "then (it passed the protected-path and secret checks, nothing more). Comment `/agent retry <guidance>` "
            "to continue from it."
        )
    return (
        f"Incomplete: the agent reached its {limit} before it finished, and this is the work it had done by then "
        "(it passed the protected-path and secret checks, nothing more). Comment `/agent retry <guidance>` to "
        "continue from it, or raise the limit in `.github/mini-fix.yml` (`limits:`)."
    )


def _body(body_vars: dict[str, Any], *, draft_fallback: bool) -> str:
    return fit(render("pr_body.md", draft_fallback=draft_fallback, **body_vars))


def pr_body_vars(issue: Issue, run: RunInfo, result: AgentResult, diff: str, run_link: str | None) -> dict[str, Any]:
    """What the PR body template needs."""
    stats = {
        "exit_status": result.exit_status,
        "steps": result.steps,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "elapsed": result.elapsed_seconds,
    }
    return {
        "issue": issue,
        "run": run,
        "stats": stats,
        "checks": checks_from_steps(steps_from_messages(result.messages)),
        "summary": untrusted_summary(result.submission),
        "diffstat": diffstat(diff),
        "links": {"run": run_link},
    }


def attach_trajectory(
    gh: GitHubGateway,
    pr: PullRequest,
    messages: list[dict[str, Any]],
    *,
    run: RunInfo,
    exit_status: str,
    run_link: str | None,
) -> None:
    """Post the trajectory as one collapsed comment on the PR."""
    body = render_trajectory(steps_from_messages(messages), run=run, exit_status=exit_status, run_link=run_link)
    gh.post_comment(pr.number, body)  # a second after the PR is opened, while the run ends: nobody waits for it
