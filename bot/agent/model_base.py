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
class ToolCall:
    """One function call of a reply, its arguments exactly as the model wrote them."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    """One assistant reply and what it cost."""

    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning_content: str | None = None
    """The server's separate reasoning text (vLLM's reasoning parsers), if any."""
    reasoning_tokens: int = 0
    """Of the completion, the tokens spent reasoning (usage.completion_tokens_details), as the server reports them."""
    message: dict[str, Any] | None = None
    """The assistant message as the server sent it (kept and sent back as is); None = role and content only."""

    def as_message(self) -> dict[str, Any]:
        """The assistant message for the history, without our bookkeeping."""
        return dict(self.message) if self.message is not None else {"role": "assistant", "content": self.content}


class Model(Protocol):
    """A chat model. Raises bot.agent.errors.ModelError subclasses on failures it will not retry."""

    name: str

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """Send the whole history (every key of each message but `extra`); return the next reply."""
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
