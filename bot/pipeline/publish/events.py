"""What a run tells its status comment, as events: each step returns what it learned, the run turns each fact into
one frozen event appended to the status comment's list, and every text about the run (the status comment, the
outcome comment, the PR body, the trajectory comment) is rendered from the fold of that list over the run's start."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from bot.jobs import RunInfo

NOTES = "notes"


@dataclass(frozen=True)
class Said:
    """One fact about the run: `key` is a `RunInfo` key; a note is added to the list, any other value replaces
    the one before it (the latest wins)."""

    key: str
    text: str


def note(text: str) -> Said:
    """A line for the notes (where the change went, why a check was skipped, ...)."""
    return Said(NOTES, text)


def fold(start: RunInfo, events: Iterable[Said]) -> RunInfo:
    """The run as the templates read it: `start` with every event applied in order (`start` is not changed)."""
    notes: list[str] = list(start.get("notes", []))
    info: dict[str, Any] = {**start, NOTES: notes}
    for event in events:
        if event.key == NOTES:
            notes.append(event.text)
        else:
            info[event.key] = event.text
    if not notes:
        del info[NOTES]  # as before: a run with no notes has no `notes` key
    return cast(RunInfo, info)
