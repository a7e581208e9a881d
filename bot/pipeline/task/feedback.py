"""What reviewers said since the last run, for a retry's task: the PR's conversation and its review comments."""

from __future__ import annotations

from bot.github.gateway import Comment, GitHubGateway
from bot.pipeline.git.gitops import branch_name

STATUS_MARKER = "<!-- mini-fix:status -->"  # in every status comment (prompts/status_comment.md)


def previous_run_start(comments: list[Comment], current_status: int | None) -> str:
    """When the previous run began (ISO time of its status comment), or "" when there was none."""
    starts = [
        c.created_at
        for c in comments
        if c.author.endswith("[bot]") and STATUS_MARKER in c.body and c.id != current_status
    ]
    return max(starts, default="")


def review_feedback(
    gh: GitHubGateway, issue: int, issue_comments: list[Comment], current_status: int | None
) -> list[Comment]:
    """Comments on the issue's open mini-fix PR (conversation and diff) made since the previous run began."""
    pr = gh.find_open_pr(branch_name(issue))
    if pr is None:
        return []
    since = previous_run_start(issue_comments, current_status)
    found = gh.list_comments(pr.number) + gh.list_review_comments(pr.number)
    return sorted((c for c in found if c.created_at > since), key=lambda c: c.created_at)
