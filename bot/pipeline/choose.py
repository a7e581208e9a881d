"""Which attempt is published: a deterministic ranking over what the App itself verified, with a reason each."""

from __future__ import annotations

from bot.pipeline.candidates import Candidate, Choice


def choose(candidates: list[Candidate]) -> Choice:
    """Rank the acceptable candidates (tests pass, reproductions passed, fewer lines, lower index); reason each."""
    ranking = [c for c in candidates if c.acceptable]
    return Choice(chosen=ranking[0] if ranking else None, ranking=ranking, reasons={})


def attempts_table(choice: Choice, candidates: list[Candidate], links: dict[int, str | None]) -> str:
    """The markdown table of every attempt for the PR body or the outcome comment."""
    return ""


def evidence(candidate: Candidate) -> str:
    """The candidate's reproduction test seen failing before its fix and passing after it; '' when there is none."""
    return ""
