"""The model seam: one chat completion per call, with its token counts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

# The monotonic time by which the current model call must be over (the run's wall budget), or None. A context
# variable, not a `query` argument: the seam keeps mini-swe-agent's one-argument `query`, and each attempt's
# agent runs in its own thread, so each sees only its own deadline.
_DEADLINE: ContextVar[float | None] = ContextVar("model_call_deadline", default=None)


@dataclass(frozen=True)
class ModelReply:
    """One assistant reply and what it cost."""

    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    finish_reason: str | None = None


class Model(Protocol):
    """A chat model. Raises bot.agent.errors.ModelError subclasses on failures it will not retry."""

    name: str

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """Send the whole history; return the next reply."""
        ...


@contextmanager
def deadline(seconds_left: float | None) -> Iterator[None]:
    """While inside, model calls (retry waits included) must end within `seconds_left` seconds (None: no bound)."""
    token = _DEADLINE.set(None if seconds_left is None else time.monotonic() + max(0.0, seconds_left))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def seconds_left() -> float | None:
    """Seconds the current model call may still take, by the run's wall budget; None when it has none."""
    end = _DEADLINE.get()
    return None if end is None else max(0.0, end - time.monotonic())
