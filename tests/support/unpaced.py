"""GitHub write pacers without the second between writes, for tests that do not check pacing."""

from __future__ import annotations

from bot.github.pacing import Pacers, WritePacer


def unpaced() -> Pacers:
    """Each installation's writes still one at a time, but each right after the last (no real second waited)."""
    return Pacers(lambda: WritePacer(0.0))
