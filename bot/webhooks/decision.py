"""What a webhook delivery asks of us, read from the raw JSON (never a strict model parse)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from bot.jobs import CancelRequest, InstallationChange, JobRequest, PrEvent

Action = Literal["enqueue", "cancel", "ignore", "installation", "help", "pr_outcome"]
Payload = dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """The outcome of `decide`: one action and why, plus what the action needs."""

    action: Action
    reason: str
    job: JobRequest | None = None
    cancel: CancelRequest | None = None
    installation: InstallationChange | None = None
    pr_event: PrEvent | None = None

    def log_fields(self) -> dict[str, object]:
        """The fields every log line about this delivery is bound to."""
        target = self.job or self.cancel
        fields: dict[str, object] = {"decision": self.action}
        if target is not None:
            fields.update(installation=target.installation_id, repo=target.repo, issue=target.issue)
        elif self.installation is not None:
            fields["installation"] = self.installation.installation_id
        return fields


def ignore(reason: str) -> Decision:
    """A decision to do nothing (the delivery is still answered 2xx)."""
    return Decision("ignore", reason)


def dig(payload: Payload, *keys: str) -> Any:
    """payload[k1][k2]..., or None where a level is missing or not an object."""
    value: Any = payload
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def dig_int(payload: Payload, *keys: str) -> int | None:
    """An integer field, or None (bools are not integers here)."""
    value = dig(payload, *keys)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dig_str(payload: Payload, *keys: str) -> str | None:
    """A string field, or None."""
    value = dig(payload, *keys)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class IssueContext:
    """Fields shared by issue and comment events."""

    installation_id: int
    repo: str
    issue: int
    sender: str
    is_pull_request: bool
    state: str


def issue_context(payload: Payload) -> IssueContext | Decision:
    """The issue an event is about, or an `ignore` decision saying which field is missing."""
    installation_id = dig_int(payload, "installation", "id")
    repo = dig_str(payload, "repository", "full_name")
    number = dig_int(payload, "issue", "number")
    sender = dig_str(payload, "sender", "login")
    if installation_id is None:
        return ignore("no installation in the payload (not delivered to a GitHub App)")
    if repo is None or number is None or sender is None:
        return ignore("payload lacks repository.full_name, issue.number or sender.login")
    is_pr = dig(payload, "issue", "pull_request") is not None
    state = dig_str(payload, "issue", "state") or "open"
    return IssueContext(installation_id, repo, number, sender, is_pr, state)


def from_bot(payload: Payload) -> bool:
    """True when a bot (including ourselves) sent the event."""
    return dig_str(payload, "sender", "type") == "Bot"
