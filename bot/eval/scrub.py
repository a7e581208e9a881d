"""The export's own redaction pass: known secrets, then anything shaped like a token or a key."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.trajectory import REDACTED, redact

# Shapes of credentials that must never leave in training data, whatever the trajectory writer caught.
PATTERNS = [
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bv1\.[0-9a-f]{40}\b"),  # old-style installation tokens
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),
    re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"(?i)(authorization:\s*(?:bearer|basic|token)\s+)[A-Za-z0-9+/=._-]{8,}"),
    re.compile(r"(?i)(x-access-token:)[^@\s]+"),
]


def scrub_text(text: str) -> tuple[str, int]:
    """`text` with every credential-shaped run replaced by `***`, and how many were replaced."""
    count = 0
    for pattern in PATTERNS:
        text, n = pattern.subn(lambda m: (m.group(1) if m.re.groups else "") + REDACTED, text)
        count += n
    return text, count


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
