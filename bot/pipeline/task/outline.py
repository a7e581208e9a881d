"""The repository's layout for the agent's first message: short, because the first message is paid on every step.

Files at the top and one directory down are named; a deeper directory is one line with its file count. Past
`MAX_LINES` the rest is a count. A small model reads the source the issue names from this instead of listing
directories for several steps; a long flat file list made the first prompt 5× upstream's and bought nothing.
"""

from __future__ import annotations

from collections import Counter

MAX_DEPTH = 2  # path components shown: `src/app.py` whole, `src/app/models.py` as `src/app/ (N files)`
MAX_LINES = 30


def outline(paths: list[str], *, depth: int = MAX_DEPTH, limit: int = MAX_LINES) -> str:
    """`paths` (git's, `/`-separated) as at most `limit` lines: shallow files by name, deeper directories counted."""
    deep: Counter[str] = Counter()
    lines: list[str] = []
    for path in sorted(paths):
        parts = path.split("/")
        if len(parts) <= depth:
            lines.append(path)
        else:
            folder = "/".join(parts[:depth]) + "/"
            if folder not in deep:
                lines.append(folder)
            deep[folder] += 1
    shown = [f"{line} ({deep[line]} file{'s' if deep[line] > 1 else ''})" if line in deep else line for line in lines]
    more = len(shown) - limit
    return "\n".join(shown[:limit]) + (f"\n... and {more} more entries" if more > 0 else "")
