"""The export's own redaction pass: known secrets, then anything shaped like a token or a key (bot.redaction)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.redaction import scrub_text
from bot.trajectory import redact


def scrub_messages(messages: list[dict[str, Any]], secrets: Sequence[str]) -> tuple[list[dict[str, Any]], int]:
    """Messages with the deployment's secrets and credential shapes redacted; and how many shapes were caught."""
    cleaned: list[dict[str, Any]] = redact(messages, secrets)
    total = 0
    out = []
    for message in cleaned:
        content, n = scrub_text(str(message.get("content", "")))
        total += n
        out.append({**message, "content": content})
    return out, total
