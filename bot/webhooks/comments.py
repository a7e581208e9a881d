"""`issue_comment` events: `/agent retry`, `/agent stop` and `/agent help` on an issue or on a PR."""

from __future__ import annotations

from bot.jobs import JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks.commands import Command, parse_command
from bot.webhooks.decision import (
    Decision,
    IssueContext,
    Payload,
    dig_int,
    dig_str,
    from_bot,
    ignore,
    issue_context,
)


def decide(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """Decide an `issue_comment` delivery."""
    if dig_str(payload, "action") != "created":
        return ignore("only new comments carry commands")
    if from_bot(payload):
        return ignore("sender is a bot")
    command = parse_command(dig_str(payload, "comment", "body") or "")
    if command is None:
        return ignore("no /agent command in the comment")
    ctx = issue_context(payload)
    if isinstance(ctx, Decision):
        return ctx
    if command.name in ("help", "unknown", "stop"):
        return _control(command, ctx, delivery_id, dig_int(payload, "comment", "id"))
    if ctx.state != "open" and not ctx.is_pull_request:
        return ignore("the issue is closed")
    # On a PR the number is the PR's: the ledger maps it to the issue of the PR it opened, else the pipeline
    # resolves the issue from the PR body's `Fixes #N`.
    fresh, guidance = fresh_flag(command.guidance)
    # --fresh: start over from the default branch instead of building on the PR's head
    details = JobDetails(on_pull_request=ctx.is_pull_request, fresh=fresh)
    job = JobRequest(
        JobKind.RETRY,
        ctx.installation_id,
        ctx.repo,
        ctx.issue,
        ctx.sender,
        delivery_id,
        guidance=guidance,
        comment_id=dig_int(payload, "comment", "id"),
        details=details,
    )
    return Decision("enqueue", "/agent retry --fresh" if fresh else "/agent retry", job=job)


def fresh_flag(guidance: str) -> tuple[bool, str]:
    """`--fresh` as the first word of a retry's guidance: (True, the rest); else (False, the guidance)."""
    first, _, rest = guidance.partition("\n")
    word, _, after = first.strip().partition(" ")
    if word.lower() != "--fresh":
        return False, guidance
    return True, "\n".join(part for part in (after.strip(), rest.strip()) if part)


def _control(command: Command, ctx: IssueContext, delivery_id: str, comment_id: int | None) -> Decision:
    """`/agent stop` and `/agent help` become control jobs: the worker checks the sender's permission
    before it cancels or replies (this path never calls GitHub), and they never supersede a run."""
    kind = JobKind.STOP if command.name == "stop" else JobKind.HELP
    unknown = command.guidance if command.name == "unknown" else ""
    details = JobDetails(on_pull_request=ctx.is_pull_request, unknown_command=unknown)
    job = JobRequest(
        kind, ctx.installation_id, ctx.repo, ctx.issue, ctx.sender, delivery_id, comment_id=comment_id, details=details
    )
    return Decision("enqueue", f"/agent {command.name}", job=job)
