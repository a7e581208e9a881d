"""The PR's Markdown about a job's attempts: the attempts table, the reproduction evidence, dropped-test notes.

Words only: the ranking and its reasons are `ranking.py`'s, the verdicts `verify.py`'s.
"""

from __future__ import annotations

from typing import Any

from bot.pipeline.attempts import testrun
from bot.pipeline.candidates import Candidate, Choice
from bot.pipeline.judge.ranking import NAMES_SHOWN, dropped_text, reproductions_passed, valid_reproductions
from bot.render import render

TEMPLATE = "attempts_table.md"
DETAIL_CHARS = 300  # of a reproduction's detail in a table cell (a git error can be long)


def dropped_notes(c: Candidate) -> list[str]:
    """What the App could not check about dropped tests, in a reviewer's words (only where it matters)."""
    notes = []
    if c.dropped is not None and c.dropped.uncertain and not c.dropped.tests:
        notes.append(
            "whether it drops tests cannot be told: gone or changed are test declarations the App cannot name ("
            + ", ".join(c.dropped.uncertain[:NAMES_SHOWN])
            + (f" and {len(c.dropped.uncertain) - NAMES_SHOWN} more" if len(c.dropped.uncertain) > NAMES_SHOWN else "")
            + ")"
        )
    if c.dropped is not None and c.dropped.unparsed:
        files = ", ".join(c.dropped.unparsed)
        notes.append(
            f"whether it drops tests in {files} cannot be told: "
            "not readable as code of its language before or after the change, or too costly to scan"
        )
    if c.dropped is not None and c.dropped.unchecked:
        files = ", ".join(c.dropped.unchecked)
        notes.append(f"{files}: not checked for dropped tests (a language the App does not scan)")
    return notes


def attempts_table(choice: Choice, candidates: list[Candidate], links: dict[int, str | None]) -> str:
    """The markdown table of every attempt for the PR body or the outcome comment."""
    total = valid_reproductions(candidates)
    rows = [_row(c, choice, total, links.get(c.index)) for c in sorted(candidates, key=lambda c: c.index)]
    return render(TEMPLATE, part="table", rows=rows, total=total)


def _row(c: Candidate, choice: Choice, total: int, link: str | None) -> dict[str, Any]:
    rep = c.reproduction
    return {
        "index": c.index,
        "temperature": c.temperature,
        "ended": "submitted" if c.submitted else (c.exit_status or "did not finish"),
        "refused": c.refused,
        "acceptable": c.acceptable,
        "test": c.test,
        "test_verdict": testrun.of(c.test) if c.test is not None else None,
        "test_summary": str((c.test or {}).get("summary") or "")[:DETAIL_CHARS],
        "dropped": dropped_text(c) if c.acceptable else "",
        "dropped_notes": dropped_notes(c) if c.acceptable else [],
        "reproduction": _repro_cell(c),
        "repro_detail": rep.detail[:DETAIL_CHARS] if rep is not None else "",
        "passed": reproductions_passed(c) if c.acceptable and total else None,
        "lines": c.lines_changed if c.submitted else None,
        "chosen": choice.chosen is c,
        "reason": _without_verdict(choice.reasons.get(c.index, "")),
        "link": link,
    }


def _without_verdict(reason: str) -> str:
    """The reason without its leading "chosen: " / "not chosen: " (the table's cell says which)."""
    for prefix in ("not chosen: ", "chosen: "):
        if reason.startswith(prefix):
            return reason[len(prefix) :]
    return reason


def _repro_cell(c: Candidate) -> str:
    rep = c.reproduction
    if rep is None or not c.acceptable:
        return "none"
    if rep.valid:
        return "valid"
    if not rep.files:
        return "none"
    if rep.fails_before is False:
        return "passes before"
    if rep.fails_before is True and rep.passes_after is False:
        return "fails after"
    if rep.detail.startswith("could not run the tests"):
        return "could not run"  # a missing tool, module or dependency: no evidence, never "fails before"
    return "not checked"


def evidence(candidate: Candidate) -> str:
    """The candidate's reproduction test seen failing before its fix and passing after it; '' when there is none."""
    rep = candidate.reproduction
    if rep is None or not rep.valid:
        return ""
    return render(TEMPLATE, part="evidence", rep=rep, index=candidate.index)
