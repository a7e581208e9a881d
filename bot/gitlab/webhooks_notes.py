"""`Note Hook`: `/agent retry`, `/agent stop` and `/agent help` in a note on an issue or a merge request.

A note's `noteable_id` is the global id: the iid a person sees is in the hook's `issue` or `merge_request` object.
A diff note is one comment of a review: it carries no command of its own here, and the review follow-up waits for the
reviewer's state (`webhooks_mrs`), so N diff notes never start N follow-ups.
"""

from __future__ import annotations

from typing import Any

from bot.forge_ids import mr_number
from bot.gitlab.webhooks_context import BotMergeRequest, Project, bot_merge_request, is_bot_user, project
from bot.jobs import JobDetails, JobKind, JobRequest
from bot.settings import Settings
from bot.webhooks.commands import parse_command
from bot.webhooks.comments import fresh_flag
from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, ignore

NOTEABLES = {"Issue": "issue", "MergeRequest": "merge_request"}


def decide(payload: Payload, settings: Settings, delivery_id: str) -> Decision:
    """Decide a `Note Hook` delivery."""
    note = dig(payload, "object_attributes")
    # Older GitLab sends no `action`: a note hook without one is a new note.
    if not isinstance(note, dict) or dig_str(note, "action") not in (None, "create"):
        return ignore("only new notes carry commands")
    if note.get("system") is True:
        return ignore("a system note (GitLab's own record of an action)")
    where = project(payload)
    if isinstance(where, Decision):
        return where
    if is_bot_user(where.user, settings):
        return ignore("sent by a bot (mini-fix's own notes come back as hooks)")
    key = NOTEABLES.get(dig_str(note, "noteable_type") or "")
    target = dig(payload, key) if key else None
    if key is None or not isinstance(target, dict):
        return ignore("not a note on an issue or a merge request")
    command = parse_command(dig_str(note, "note") or "")
    if command is None:
        if dig_str(note, "type") == "DiffNote":
            return ignore("a diff note: a review follow-up waits for the reviewer's state")
        return ignore("no /agent command in the note")
    iid = dig_int(target, "iid")
    if iid is None:
        return ignore(f"payload lacks {key}.iid")
    on_mr = key == "merge_request"
    details, issue = _place(where, target, iid, on_mr)
    note_id = dig_int(note, "id")
    if command.name in ("help", "unknown", "stop"):
        # Control jobs: the worker checks the sender's role before it cancels or replies.
        kind = JobKind.STOP if command.name == "stop" else JobKind.HELP
        unknown = command.guidance if command.name == "unknown" else ""
        job = JobRequest(
            kind, where.installation_id, where.repo, issue, where.user, delivery_id, comment_id=note_id,
            details=JobDetails(**details, unknown_command=unknown),
        )  # fmt: skip
        return Decision("enqueue", f"/agent {command.name}", job=job)
    if not on_mr and dig_str(target, "state") not in (None, "opened"):
        return ignore("the issue is closed")
    fresh, guidance = fresh_flag(command.guidance)
    job = JobRequest(
        JobKind.RETRY, where.installation_id, where.repo, issue, where.user, delivery_id, guidance=guidance,
        comment_id=note_id, details=JobDetails(**details, fresh=fresh),
    )  # fmt: skip
    return Decision("enqueue", "/agent retry --fresh" if fresh else "/agent retry", job=job)


def _place(where: Project, target: Any, iid: int, on_mr: bool) -> tuple[dict[str, Any], int]:
    """(details, issue) of a command: on one of mini-fix's MRs, its issue (from the branch) and the MR; on another
    MR, the MR's iid with `on_pull_request` (the pipeline resolves its issue); on an issue, the issue."""
    if not on_mr:
        return {}, iid
    ours = bot_merge_request(where, target)
    if isinstance(ours, BotMergeRequest):
        return {"pull_request": ours.iid}, ours.issue
    return {"on_pull_request": True}, mr_number(iid)  # numbered apart from the issues (bot/forge_ids.py)
