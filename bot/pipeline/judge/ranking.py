"""Which attempt is published: a deterministic ranking over what the App itself verified, with a reason each.

Only acceptable candidates (submitted a change, nothing refused) are ranked, by (a) the repository's `test`
passing (then no evidence either way: tests that could not run or ran none, `testrun.py`; then failing), then a
change that touches more than its own test files ahead of one that only adds or edits tests (it
may reproduce the issue, but it fixes nothing), then a change that keeps every existing test ahead of one where that
cannot be told (a test declaration the scanners cannot name gone, or a test file they cannot read), ahead of one
that drops some (tests or cases of the base commit's test files gone after it, found by the worker in its
own trees: `dropped.py`; a fix that loses a test is still a fix a reviewer can repair, a tests-only change is
not), (b) how many of all attempts' valid reproduction tests it passes
(its own counts; a claimed test that passes on the base commit too is not valid and earns nothing), (c) fewer
lines changed, (d) the lower attempt number. The PR's Markdown about the choice is `prtext.py`'s.
"""

from __future__ import annotations

from bot.pipeline.attempts import testrun
from bot.pipeline.attempts.exits import SUBMITTED
from bot.pipeline.candidates import Candidate, Choice

NAMES_SHOWN = 10  # dropped tests named in a table cell or the PR body, then "and N more"


def reproductions_passed(c: Candidate) -> int:
    """Valid reproduction tests this candidate passes: its own, and the other attempts' it was run against."""
    own = c.reproduction is not None and c.reproduction.valid
    return int(own) + sum(1 for passed in c.cross.values() if passed)


def valid_reproductions(candidates: list[Candidate]) -> int:
    """How many acceptable candidates have a valid reproduction test (what `reproductions_passed` counts from)."""
    return sum(1 for c in candidates if c.acceptable and c.reproduction is not None and c.reproduction.valid)


def choose(candidates: list[Candidate]) -> Choice:
    """Rank the acceptable candidates (tests pass, code changed, no existing test dropped (nor a doubt about it),
    reproductions passed, fewer lines, lower index)."""
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


def _key(c: Candidate, tested: bool) -> tuple[int, bool, int, int, int, int]:
    tests = _test_rank(c) if tested else 0
    return (tests, only_tests(c), dropping(c), -reproductions_passed(c), c.lines_changed, c.index)


def dropping(c: Candidate) -> int:
    """0: keeps every existing test; 1: whether it drops one cannot be told; 2: drops one."""
    return 2 if c.drops_tests else 1 if c.cannot_tell_drops else 0


def cannot_tell_text(c: Candidate) -> str:
    """`whether it drops tests cannot be told: a, b` (what is gone, else the unreadable files); '' when it can."""
    if not c.cannot_tell_drops or c.dropped is None:
        return ""
    names = c.dropped.uncertain or c.dropped.unparsed
    more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    what = "gone: " if c.dropped.uncertain else "unreadable: "
    return "whether it drops tests cannot be told (" + what + ", ".join(names[:NAMES_SHOWN]) + more + ")"


def dropped_text(c: Candidate) -> str:
    """`drops existing tests: a, b` (the first few named); '' when it drops none."""
    if c.dropped is None or not c.dropped.tests:
        return ""
    names = c.dropped.tests
    more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return "drops existing tests: " + ", ".join(names[:NAMES_SHOWN]) + more


# --- the repository's tests: passed, no evidence (could not run, no tests ran), failed (`testrun.py`) -------------

_RANKS = {testrun.PASSED: 0, testrun.NO_TESTS: 1, testrun.NOT_RUN: 1, testrun.FAILED: 2}


def _test_rank(c: Candidate) -> int:
    """0 the tests pass, 1 no evidence either way (no test command result, none ran, could not run), 2 they fail."""
    return _RANKS[testrun.of(c.test)] if c.test is not None else 1


def _test_words(c: Candidate) -> str:
    verdict, test = testrun.of(c.test), c.test or {}
    why = str(test.get("summary") or "")[:200]
    if verdict == testrun.PASSED:
        return "the repository's tests pass"
    if verdict == testrun.NO_TESTS:
        return "the repository's test command ran no test" + (f" ({why})" if why else "")
    if verdict == testrun.NOT_RUN:
        return "the repository's tests could not run" + (f": {why}" if why else "") + " (no evidence either way)"
    return f"the repository's tests fail on it (exit {test.get('returncode')})"


def _tests_behind(c: Candidate, chosen: Candidate) -> str:
    theirs = {testrun.PASSED: "pass", testrun.FAILED: "fail"}.get(testrun.of(chosen.test), "give no evidence")
    return f"{_test_words(c)}, and {theirs} on attempt {chosen.index}"


# ---------------------------------------------------------------------------------------------------------------------


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
        parts.append(_test_words(c))
    if total:
        parts.append(f"it passes {reproductions_passed(c)} of {total} valid reproduction tests")
    if c.drops_tests:
        parts.append("but it " + dropped_text(c))
    elif c.cannot_tell_drops:
        parts.append("but " + cannot_tell_text(c))
    if only_tests(c):
        parts.append("but it changes only test files (no other attempt changed the code)")
    parts.append(f"{c.lines_changed} lines changed")
    return ", ".join(parts)


def _behind(c: Candidate, chosen: Candidate, tested: bool, total: int) -> str:
    if tested and _test_rank(c) != _test_rank(chosen):
        return _tests_behind(c, chosen)
    if only_tests(c) and not only_tests(chosen):
        return f"it changes only test files, so it fixes nothing; attempt {chosen.index} changes the code"
    if dropping(c) != dropping(chosen):
        other = "drops none" if dropping(chosen) == 0 else "drops none the App can name"
        what = "it " + dropped_text(c) if c.drops_tests else cannot_tell_text(c)
        return f"{what}; attempt {chosen.index} {other}"
    mine, theirs = reproductions_passed(c), reproductions_passed(chosen)
    if mine != theirs:
        return f"it passes {mine} of {total} valid reproduction tests, attempt {chosen.index} passes {theirs}"
    if c.lines_changed != chosen.lines_changed:
        return (
            f"as good as attempt {chosen.index} on tests and reproductions, but a larger change "
            f"({c.lines_changed} lines against {chosen.lines_changed})"
        )
    return f"as good as attempt {chosen.index} on every count; the earlier attempt wins the tie"
