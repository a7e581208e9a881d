"""Credential shapes: redacted wherever text leaves the worker even when no known secret matched (a token minted
for one job, a key read through some other hole)."""

from __future__ import annotations

import re

REDACTED = "***"

# Each pattern's optional group 1 is a prefix kept in front of the redaction (a header name).
PATTERNS = [
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bv1\.[0-9a-f]{40}\b"),  # old-style installation tokens
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),
    re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"(?i:(authorization:\s*(?:bearer|basic|token)\s+)[A-Za-z0-9+/=._-]{8,})"),
    re.compile(r"(?i:(x-access-token:)[^@\s]+)"),
    re.compile(r"(?i:(oauth2:)[^@\s/]+)(?=@)"),  # GitLab's git URL: a git error can echo `https://oauth2:<token>@`
    re.compile(r"\b(?:glpat|gloas|gldt|glrt|glcbt|glptt|glft|glimt|glagent|glsoat|glffct)-[A-Za-z0-9_-]{20,}"),
]
# One pass that says whether any pattern can match: most text holds none, and a log line pays only this.
_ANY = re.compile("|".join(f"(?:{p.pattern})" for p in PATTERNS), re.DOTALL)


def scrub_text(text: str) -> tuple[str, int]:
    """`text` with every credential-shaped run replaced by `***`, and how many were replaced."""
    if _ANY.search(text) is None:
        return text, 0
    count = 0
    for pattern in PATTERNS:
        text, n = pattern.subn(lambda m: (m.group(1) if m.re.groups else "") + REDACTED, text)
        count += n
    return text, count
