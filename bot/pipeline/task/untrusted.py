"""Text from CI and reviews on its way to the model: hidden text removed, secrets redacted, capped, quoted.

CI logs, check output and review comments are written by whoever controls the repository's CI or can review: as
untrusted as the issue. Every line is quoted (`| `) and backtick or tilde runs are broken up, so no line of it can
open a code fence the agent would read as its own command, or pass for a heading of the task.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.pipeline.task.issue import cap, clean
from bot.redaction import scrub_text
from bot.trajectory import redact

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
_FENCE = re.compile(r"`{3,}|~{3,}")


def plain(text: str, secrets: Sequence[str]) -> str:
    """`text` with terminal escapes and hidden text removed and every secret redacted (known ones and shapes)."""
    known = str(redact(clean(_ANSI.sub("", text)), secrets))
    return scrub_text(known)[0]


def quoted(text: str, limit: int, secrets: Sequence[str]) -> str:
    """`text` fit to show the model: `plain`, cut to `limit` characters, no fences, every line quoted."""
    # Redact before cutting: a cut through a secret would leave part of it no pattern matches any more.
    body = _FENCE.sub(lambda m: "'" * len(m.group()), cap(plain(text, secrets), limit))
    return "\n".join(f"| {line}" for line in body.splitlines()) or "| (empty)"
