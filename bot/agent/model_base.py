"""The model seam: one chat completion per call, with its token counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


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
