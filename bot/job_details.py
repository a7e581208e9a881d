"""What a job knows beyond the ledger's own columns (`JobDetails`), read back leniently: a row written by an older
or newer version, or by hand, always loads. Imports nothing of the App."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class AddressedComment:
    """One review comment a review follow-up was given, as its answer on the PR lists it."""

    n: int
    path: str
    line: int | None
    first: str  # the comment's first line, cleaned


@dataclass(frozen=True)
class AddressedAsk:
    """One ask a run carried (its own, or one folded into it), as its answer on the PR lists it."""

    kind: str  # fix | retry | ci | review
    requester: str
    summary: str  # one cleaned line: the retry's guidance, the failing checks, the review's first line
    comments: tuple[AddressedComment, ...] = ()  # a review's inline comments


@dataclass(frozen=True)
class JobDetails:
    """What a job knows beyond the ledger's own columns: written by the webhook path (and by the ledger, for a
    request on a PR), read by the pipeline. Stored in the ledger's `extra` column as a JSON object of the fields
    that differ from their defaults, under these names, so rows of earlier versions (the same object) still load
    and SQL can test a key (`queue_full`)."""

    label: str = ""  # fix: the label the webhook saw added (the worker drops the job if the config names another)
    on_pull_request: bool = False  # asked on a PR whose issue is still unknown: `issue` holds the PR's number
    pull_request: int | None = None  # the PR a follow-up, or a retry moved to its issue by the ledger, is about
    head_sha: str = ""  # follow-ups: the PR's head commit when the event was sent
    review_id: int | None = None  # review follow-up: the review to read
    delivery: str = ""  # follow-ups: the delivery that asked (their `delivery_id` is the event's key)
    fresh: bool = False  # `/agent retry --fresh`: start from the default branch, not the PR's head
    unknown_command: str = ""  # help: the unknown `/agent` command that asked for it
    queue_full: bool = False  # the installation already had its quota of queued jobs (bot/webhooks/guards.py)
    followup_task: str = ""  # worker only: a follow-up's new information (CI failures, the review), for its task
    followup_addressed: tuple[AddressedComment, ...] = ()  # worker only: the review comments it was given
    followup_asks: tuple[AddressedAsk, ...] = ()  # worker only: every ask the run carries, its own first
    ran: bool = False  # worker only: its run started (the agent was handed the task); set in the ledger at that moment

    def to_json(self) -> str:
        """The ledger column's text: the fields that differ from their defaults."""
        return json.dumps({k: v for k, v in asdict(self).items() if v != _DEFAULTS[k]})

    @classmethod
    def from_json(cls, text: str | None) -> JobDetails:
        """The details a ledger row holds; unknown keys, and values of the wrong type, are ignored."""
        try:
            data = json.loads(text or "{}")
        except ValueError:
            return cls()
        return cls.from_mapping(data) if isinstance(data, Mapping) else cls()

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> JobDetails:
        """The details from a JSON object (see `from_json`)."""
        return cls(
            label=_text(data.get("label")),
            on_pull_request=data.get("on_pull_request") is True,
            pull_request=_number(data.get("pull_request")),
            head_sha=_text(data.get("head_sha")),
            review_id=_number(data.get("review_id")),
            delivery=_text(data.get("delivery")),
            fresh=data.get("fresh") is True,
            unknown_command=_text(data.get("unknown_command")),
            queue_full=data.get("queue_full") is True,
            followup_task=_text(data.get("followup_task")),
            followup_addressed=_addressed(data.get("followup_addressed")),
            followup_asks=_asks(data.get("followup_asks")),
            ran=data.get("ran") is True,
        )


_DEFAULTS: dict[str, object] = {f.name: f.default for f in fields(JobDetails)}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    # isascii: "²".isdigit() is true but int("²") raises, and a ledger row must always load
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def _addressed(value: object) -> tuple[AddressedComment, ...]:
    if not isinstance(value, list):
        return ()
    found = []
    for item in value:
        if isinstance(item, Mapping) and (n := _number(item.get("n"))) is not None:
            path, line, first = _text(item.get("path")), _number(item.get("line")), _text(item.get("first"))
            found.append(AddressedComment(n, path, line, first))
    return tuple(found)


def _asks(value: object) -> tuple[AddressedAsk, ...]:
    if not isinstance(value, list):
        return ()
    found = []
    for item in value:
        if isinstance(item, Mapping) and (kind := _text(item.get("kind"))):
            comments = _addressed(item.get("comments"))
            found.append(AddressedAsk(kind, _text(item.get("requester")), _text(item.get("summary")), comments))
    return tuple(found)
