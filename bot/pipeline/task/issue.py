"""The agent's task: the issue, comments by people with write access, retry guidance; sanitised, capped."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from bot.github.gateway import Comment, Issue

MAX_TASK_CHARS = 24_000
MAX_BODY_CHARS = 12_000
MAX_COMMENT_CHARS = 3_000
MAX_GUIDANCE_CHARS = 4_000
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_KEEP_CONTROLS = {"\n", "\t"}


def clean(text: str) -> str:
    """Drop HTML comments and invisible characters (zero-width, bidi controls, other format/control chars)."""
    text = _HTML_COMMENT.sub("", text.replace("\r\n", "\n"))
    kept = (ch for ch in text if ch in _KEEP_CONTROLS or unicodedata.category(ch) not in ("Cf", "Cc", "Co"))
    return "".join(kept).strip()


def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying so."""
    if len(text) <= limit:
        return text
    note = f"\n[… cut: {len(text) - limit} more characters]"
    return text[: max(0, limit - len(note))] + note


def build_task(issue: Issue, comments: list[Comment], *, can_write: Callable[[str], bool], guidance: str = "") -> str:
    """The task text: title, body, writers' comments (oldest first), then any retry guidance."""
    parts = [f"# {clean(issue.title)}", cap(clean(issue.body), MAX_BODY_CHARS) or "(no description)"]
    written = _writers_comments(comments, can_write)
    if written:
        parts.append("## Comments from maintainers")
        parts += [f"@{c.author} wrote:\n{cap(clean(c.body), MAX_COMMENT_CHARS)}" for c in written]
    if guidance.strip():
        parts += ["## Guidance for this attempt", cap(clean(guidance), MAX_GUIDANCE_CHARS)]
    return cap("\n\n".join(parts), MAX_TASK_CHARS)


def _writers_comments(comments: list[Comment], can_write: Callable[[str], bool]) -> list[Comment]:
    """Comments worth showing the agent: by writers, not bots, not commands, not empty once cleaned."""
    verdicts: dict[str, bool] = {}
    kept = []
    for comment in comments:
        if comment.author.endswith("[bot]") or comment.body.lstrip().lower().startswith("/agent"):
            continue
        if comment.author not in verdicts:
            verdicts[comment.author] = can_write(comment.author)
        if verdicts[comment.author] and clean(comment.body):
            kept.append(comment)
    return kept
