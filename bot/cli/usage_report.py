"""`mini-fix usage`: what runs used (tokens, model seconds, sandbox CPU-seconds, wall time) from the ledger,
summed per repository, installation and/or day, as a table or as JSON lines. A GitLab project's repository reads
`gitlab:group/project`, so it never adds up with the GitHub repository of the same path."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.ledger import open_ledger
from bot.settings import Settings

GROUPINGS = ("repo", "installation", "day")
NUMBERS = (
    "jobs",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "model_seconds",
    "cost",
    "sandbox_cpu_seconds",
    "wall_seconds",
)
HEADERS = {"prompt_tokens": "PROMPT", "completion_tokens": "COMPLETION", "model_seconds": "MODEL_S",
           "sandbox_cpu_seconds": "CPU_S", "wall_seconds": "WALL_S"}  # fmt: skip


def since_day(days: int, now: datetime | None = None) -> str:
    """The first UTC day of the last `days` days, today included ("" for every day)."""
    if days <= 0:
        return ""
    today = (now or datetime.now(UTC)).date()
    return (today - timedelta(days=days - 1)).isoformat()


def format_table(rows: list[dict[str, Any]], by: list[str]) -> str:
    """A fixed-width table, largest token use first."""
    columns = [*by, *NUMBERS]
    cells = [[str(row[c]) for c in columns] for row in rows]
    heads = [HEADERS.get(c, c.upper()) for c in columns]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def print_usage(settings: Settings, *, by: list[str], days: int, installation: int | None, as_json: bool) -> int:
    """Print the ledger's usage sums."""
    ledger = open_ledger(settings)
    try:
        rows = ledger.usage_totals(by, since=since_day(days), installation_id=installation)
    finally:
        ledger.close()
    if as_json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(format_table(rows, by) if rows else "no usage recorded in that period")
    sys.stdout.flush()
    return 0
