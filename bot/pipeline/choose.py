"""Which attempt is published: a deterministic ranking over what the App itself verified, with a reason each.

Only acceptable candidates (submitted a change, nothing refused) are ranked, by (a) the repository's `test`
passing, then a change that touches more than its own test files ahead of one that only adds or edits tests (it
may reproduce the issue, but it fixes nothing), then a change that keeps every existing test ahead of one that
drops some (test functions or methods of the base commit's test files gone after it, found by the worker in its
own trees: `dropped.py`; a fix that loses a test is still a fix a reviewer can repair, a tests-only change is
not), (b) how many of all attempts' valid reproduction tests it passes
(its own counts; a claimed test that passes on the base commit too is not valid and earns nothing), (c) fewer
lines changed, (d) the lower attempt number.
"""

from __future__ import annotations

from typing import Any

from bot.pipeline.candidates import Candidate, Choice
from bot.pipeline.exits import SUBMITTED
from bot.render import render

TEMPLATE = "attempts_table.md"
DETAIL_CHARS = 300  # of a reproduction's detail in a table cell (a git error can be long)
NAMES_SHOWN = 10  # dropped tests named in a table cell or the PR body, then "and N more"


def reproductions_passed(c: Candidate) -> int:
    """Valid reproduction tests this candidate passes: its own, and the other attempts' it was run against."""
    own = c.reproduction is not None and c.reproduction.valid
    return int(own) + sum(1 for passed in c.cross.values() if passed)


def valid_reproductions(candidates: list[Candidate]) -> int:
    """How many acceptable candidates have a valid reproduction test (what `reproductions_passed` counts from)."""
    return sum(1 for c in candidates if c.acceptable and c.reproduction is not None and c.reproduction.valid)


def choose(candidates: list[Candidate]) -> Choice:
    """Rank the acceptable candidates (tests pass, code changed, no existing test dropped, reproductions passed,
    fewer lines, lower index)."""
    tested = any(c.test is not None for c in candidates if c.acceptable)
    ranking = sorted((c for c in candidates if c.acceptable), key=lambda c: _key(c, tested))
    chosen = ranking[0] if ranking else None
    total = valid_reproductions(candidates)
    reasons = {c.index: _reason(c, chosen, tested, total, len(ranking)) for c in candidates}
    return Choice(chosen=chosen, ranking=ranking, reasons=reasons)


def only_tests(c: Candidate) -> bool:
    """Its change touches nothing but its own test files (from the host's diff and `test_paths`)."""
    files = c.reproduction.files if c.reproduction is not None else []
    return c.change is not None and bool(files) and set(c.change.paths) <= set(files)


def _key(c: Candidate, tested: bool) -> tuple[bool, bool, bool, int, int, int]:
    failed = tested and not _test_passed(c)
    return (failed, only_tests(c), c.drops_tests, -reproductions_passed(c), c.lines_changed, c.index)


def dropped_text(c: Candidate) -> str:
    """`drops existing tests: a, b` (the first few named); '' when it drops none."""
    if c.dropped is None or not c.dropped.tests:
        return ""
    names = c.dropped.tests
    more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return "drops existing tests: " + ", ".join(names[:NAMES_SHOWN]) + more


def dropped_notes(c: Candidate) -> list[str]:
    """What the App could not check about dropped tests, in a reviewer's words (only where it matters)."""
    notes = []
    if c.dropped is not None and c.dropped.unparsed:
        files = ", ".join(c.dropped.unparsed)
        notes.append(
            f"whether it drops tests in {files} cannot be told: "
            "not valid Python before or after the change, or too costly to parse"
        )
    if c.dropped is not None and c.dropped.unchecked:
        files = ", ".join(c.dropped.unchecked)
        notes.append(f"{files}: not checked for dropped tests (only Python test files are)")
    return notes


def _test_passed(c: Candidate) -> bool:
    return c.test is not None and bool(c.test.get("passed"))


def _reason(c: Candidate, chosen: Candidate | None, tested: bool, total: int, ranked: int) -> str:
    if not c.acceptable:
        return "not chosen: " + _unacceptable(c)
    assert chosen is not None
    if c is chosen:
        best = f"; the best of {ranked} acceptable attempts" if ranked > 1 else ""
        return "chosen: " + _merits(c, tested, total) + best
    return "not chosen: " + _behind(c, chosen, tested, total)


def _unacceptable(c: Candidate) -> str:
    if c.submitted:
        return "its change touches what mini-fix may not push: " + ", ".join(c.refused)
    if c.exit_status == SUBMITTED:
        return "it submitted without changing any file"
    ended = c.exit_status or "it did not finish"
    return f"it did not submit a change ({ended}{': ' + c.error if c.error else ''})"


def _merits(c: Candidate, tested: bool, total: int) -> str:
    parts = []
    if tested:
        parts.append("the repository's tests pass" if _test_passed(c) else "the repository's tests fail on it")
    if total:
        parts.append(f"it passes {reproductions_passed(c)} of {total} valid reproduction tests")
    if c.drops_tests:
        parts.append("but it " + dropped_text(c))
    if only_tests(c):
        parts.append("but it changes only test files (no other attempt changed the code)")
    parts.append(f"{c.lines_changed} lines changed")
    return ", ".join(parts)


def _behind(c: Candidate, chosen: Candidate, tested: bool, total: int) -> str:
    if tested and _test_passed(c) != _test_passed(chosen):
        code = c.test.get("returncode") if c.test else None
        return f"the repository's tests fail on it (exit {code}), and pass on attempt {chosen.index}"
    if only_tests(c) and not only_tests(chosen):
        return f"it changes only test files, so it fixes nothing; attempt {chosen.index} changes the code"
    if c.drops_tests and not chosen.drops_tests:
        return f"it {dropped_text(c)}; attempt {chosen.index} drops none"
    mine, theirs = reproductions_passed(c), reproductions_passed(chosen)
    if mine != theirs:
        return f"it passes {mine} of {total} valid reproduction tests, attempt {chosen.index} passes {theirs}"
    if c.lines_changed != chosen.lines_changed:
        return (
            f"as good as attempt {chosen.index} on tests and reproductions, but a larger change "
            f"({c.lines_changed} lines against {chosen.lines_changed})"
        )
    return f"as good as attempt {chosen.index} on every count; the earlier attempt wins the tie"


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
    return "not checked"


def evidence(candidate: Candidate) -> str:
    """The candidate's reproduction test seen failing before its fix and passing after it; '' when there is none."""
    rep = candidate.reproduction
    if rep is None or not rep.valid:
        return ""
    return render(TEMPLATE, part="evidence", rep=rep, index=candidate.index)
