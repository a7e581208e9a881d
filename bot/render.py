"""Everything mini-fix writes on GitHub (or GitLab), rendered from the Markdown templates in prompts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from bot.forge_ids import iid_of, is_gitlab, is_mr
from bot.jobs import Outcome

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
GITHUB_BODY_LIMIT = 65_536
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_DIFF_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$")
# `Fixes #1`, `closes: owner/repo#2`: possessive and atomic, so a long run of spaces costs one pass, not n².
_CLOSING = re.compile(r"\b((?:close|fix|resolve)(?:s|d|es|ed)?)((?:\s*+:)?\s++)(?=[\w./-]*+#\d)", re.IGNORECASE)
MAX_UNTRUSTED = 20_000


# Which forge the text being rendered goes to: a GitLab job's comments say "merge request" and `!iid`.
_GITLAB: ContextVar[bool] = ContextVar("gitlab", default=False)


@contextmanager
def forge_words(installation_id: int) -> Iterator[None]:
    """Render as the forge of a job with this installation id (bot/forge_ids.py) for the block's duration."""
    token = _GITLAB.set(is_gitlab(installation_id))
    try:
        yield
    finally:
        _GITLAB.reset(token)


class _PullRequestNoun:
    """The templates' `{{ pr }}`: "pull request" on GitHub, "merge request" on GitLab."""

    def __str__(self) -> str:
        return "merge request" if _GITLAB.get() else "pull request"


def pr_ref(number: int) -> str:
    """How a PR is referred to in text: `#12` on GitHub, `!3` for a GitLab merge request (its iid)."""
    return f"!{iid_of(number)}" if _GITLAB.get() and is_mr(number) else f"#{number}"


@dataclass(frozen=True)
class OutcomeText:
    """How one way a run can end reads on GitHub."""

    key: Outcome
    icon: str
    headline: str
    reaction: str
    what: str
    retry: str


def fence(text: str, lang: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def inline_code(text: str, limit: int = 120) -> str:
    """One line of code for a table cell: first line, cut, no pipes or backticks breaking out."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = line[:limit] + ("…" if len(line) > limit or "\n" in text.strip() else "")
    return "<code>" + line.replace("&", "&amp;").replace("<", "&lt;").replace("|", "&#124;") + "</code>"


def nomention(text: str) -> str:
    """Model-written text with @mentions defused, so the bot never pings anyone on the model's say."""
    return _MENTION.sub("@\u200b", text)


def untrusted(text: str, limit: int = MAX_UNTRUSTED) -> str:
    """Text from the agent, the model or the repository, made safe to post: capped first, no @mentions, and no
    closing keyword that would close an issue when the PR merges."""
    text = str(text)[:limit]
    return _CLOSING.sub(lambda m: f"{m.group(1)}\u200b{m.group(2)}", nomention(text))


def duration(seconds: float) -> str:
    """`1h 02m`, `3m 07s` or `12s`."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


def thousands(n: int) -> str:
    """`12,345`."""
    return f"{int(n):,}"


@cache
def environment() -> jinja2.Environment:
    """The Jinja2 environment over prompts/ (strict: a missing variable is an error, not an empty string)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPTS_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(
        fence=fence,
        inline_code=inline_code,
        nomention=nomention,
        untrusted=untrusted,
        duration=duration,
        thousands=thousands,
        pr_ref=pr_ref,
    )
    env.globals["pr"] = _PullRequestNoun()
    return env


def render(template: str, **variables: Any) -> str:
    """Render one of the prompts/*.md templates."""
    return environment().get_template(template).render(**variables).strip() + "\n"


@cache
def _outcome_table() -> dict[str, dict[str, str]]:
    table: dict[str, dict[str, str]] = yaml.safe_load((PROMPTS_DIR / "outcomes.yaml").read_text())
    return table


def outcome(key: Outcome, **variables: Any) -> OutcomeText:
    """The outcome `key` from prompts/outcomes.yaml, its texts rendered with `variables`."""
    row = _outcome_table()[key]
    env = environment()
    texts = {f: env.from_string(row[f]).render(**variables) for f in ("headline", "what", "retry")}
    return OutcomeText(key=Outcome(key), icon=row["icon"], reaction=row["reaction"], **texts)


def diffstat(diff: str) -> list[dict[str, Any]]:
    """Per file: path, lines added, lines removed (binary files count 0)."""
    files: list[dict[str, Any]] = []
    for line in diff.splitlines():
        if m := _DIFF_HEADER.match(line):
            files.append({"path": m.group(2), "added": 0, "removed": 0})
        elif files and line.startswith("+") and not line.startswith("+++ "):
            files[-1]["added"] += 1
        elif files and line.startswith("-") and not line.startswith("--- "):
            files[-1]["removed"] += 1
    return files


def fit(body: str, limit: int = GITHUB_BODY_LIMIT) -> str:
    """A body GitHub accepts: cut at `limit` characters with a note (a last resort)."""
    if len(body) <= limit:
        return body
    note = "\n\n_(cut: too long for one GitHub comment)_\n"
    return body[: limit - len(note)] + note
