"""Selection among attempts: the ranking, the reasons a reviewer reads, the table and the evidence block."""

from __future__ import annotations

from typing import Any

from bot.pipeline.candidates import Candidate, DroppedTests, Reproduction
from bot.pipeline.change import Change
from bot.pipeline.judge.ranking import choose, reproductions_passed
from bot.pipeline.publish.prtext import attempts_table, dropped_notes, evidence


def _diff(lines: int, path: str = "pkg/mod.py") -> Change:
    body = "".join(f"+line {n}\n" for n in range(lines))
    diff = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,0 +1,{lines} @@\n{body}"
    return Change(diff=diff, paths=[path], links=[])


def _valid(files: list[str] | None = None) -> Reproduction:
    return Reproduction(
        files=files or ["tests/test_issue.py"],
        fails_before=True,
        passes_after=True,
        command="python3 -m unittest tests/test_issue.py",
        before="AssertionError: -1 != 5\nFAILED (failures=1)",
        after="Ran 1 test\nOK",
    )


def _passes_before() -> Reproduction:
    return Reproduction(files=["tests/test_claim.py"], fails_before=False, detail="passes on the base commit too")


def _cand(index: int, lines: int = 5, *, test: bool | None = True, **fields: Any) -> Candidate:
    result = None if test is None else {"command": "make test", "returncode": 0 if test else 2, "passed": test}
    return Candidate(
        index=index, run_id=f"run{index}", exit_status="Submitted", change=_diff(lines), test=result, **fields
    )


def test_tests_passing_beat_reproductions_which_beat_size_which_beats_order() -> None:
    broken = _cand(1, 2, test=False, reproduction=_valid())
    big = _cand(2, 40, cross={1: True, 3: True})
    small = _cand(3, 8, reproduction=_valid(), cross={1: True})
    tie = _cand(4, 8, reproduction=_valid(), cross={1: True})
    choice = choose([broken, big, small, tie])
    assert [c.index for c in choice.ranking] == [3, 4, 2, 1]
    assert choice.chosen is small
    assert choice.reasons[3].startswith("chosen: the repository's tests pass, it passes 2 of 3 valid")
    assert "the earlier attempt wins the tie" in choice.reasons[4]
    assert "larger change (40 lines against 8)" in choice.reasons[2]
    assert "tests fail on it (exit 2)" in choice.reasons[1]


def test_more_reproductions_passed_win_over_a_smaller_change() -> None:
    narrow = _cand(1, 3, reproduction=_valid())
    broad = _cand(2, 30, reproduction=_valid(), cross={1: True})
    choice = choose([narrow, broad])
    assert choice.chosen is broad
    assert "it passes 1 of 2 valid reproduction tests, attempt 2 passes 2" in choice.reasons[1]


def test_a_reproduction_that_passes_before_the_fix_earns_no_credit() -> None:
    honest = _cand(1, 20, reproduction=_valid())
    claimed = _cand(2, 4, reproduction=_passes_before())
    assert reproductions_passed(claimed) == 0
    choice = choose([honest, claimed])
    assert choice.chosen is honest
    assert "it passes 0 of 1 valid reproduction tests, attempt 1 passes 1" in choice.reasons[2]


def test_a_change_to_tests_alone_ranks_behind_one_that_changes_the_code() -> None:
    # Seen with the real 1.5B: an attempt that only added an empty test file passed the repository's tests.
    tests_only = Candidate(index=1, run_id="run1", exit_status="Submitted", change=_diff(1, "tests/test_page.py"),
                           test={"command": "make test", "returncode": 0, "passed": True},
                           reproduction=Reproduction(files=["tests/test_page.py"], fails_before=False))  # fmt: skip
    fix = _cand(2, 12)
    choice = choose([tests_only, fix])
    assert choice.chosen is fix
    assert "changes only test files, so it fixes nothing; attempt 2 changes the code" in choice.reasons[1]
    alone = choose([tests_only])
    assert alone.chosen is tests_only and "changes only test files" in alone.reasons[1]


MUL = "tests/test_ops.py::MulTest::test_mul"


def _rows(table: str) -> list[str]:
    return [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]


def test_a_change_that_drops_existing_tests_ranks_behind_one_that_keeps_them() -> None:
    # Seen with the real 1.5B on calc: its reproduction rewrote tests/test_ops.py and MulTest was gone.
    dropping = _cand(1, 3, reproduction=_valid(), cross={2: True}, dropped=DroppedTests(tests=[MUL]))
    keeping = _cand(2, 30, dropped=DroppedTests())
    broken = _cand(3, 2, test=False)
    cands = [dropping, keeping, broken]
    choice = choose(cands)
    assert [c.index for c in choice.ranking] == [2, 1, 3]  # after the tests, before reproductions and size
    assert choice.reasons[1] == f"not chosen: it drops existing tests: {MUL}; attempt 2 drops none"
    rows = _rows(attempts_table(choice, cands, {}))
    assert f":white_check_mark: passed<br>:warning: drops existing tests: {MUL} |" in rows[0]
    assert ":warning:" not in rows[1] + rows[2]


def test_a_fix_that_drops_a_test_still_beats_a_change_to_tests_alone() -> None:
    # Seen with the real 1.5B on calc: attempt 1 fixed add() with a valid reproduction but rewrote tests/test_ops.py
    # without MulTest; attempt 3 only edited tests/test_ops.py (its test passed on the base too). A reviewer can put
    # a lost test back; a change to tests alone fixes nothing.
    fix = _cand(1, 8, reproduction=_valid(["tests/test_ops.py"]), dropped=DroppedTests(tests=[MUL]))
    tests_only = Candidate(index=3, run_id="run3", exit_status="Submitted", change=_diff(4, "tests/test_ops.py"),
                           test={"command": "make test", "returncode": 0, "passed": True}, dropped=DroppedTests(),
                           reproduction=Reproduction(files=["tests/test_ops.py"], fails_before=False))  # fmt: skip
    choice = choose([fix, tests_only])
    assert choice.chosen is fix
    assert "changes only test files, so it fixes nothing; attempt 1 changes the code" in choice.reasons[3]
    assert choice.reasons[1].startswith("chosen: the repository's tests pass") and "but it drops" in choice.reasons[1]


DTD = "tests/integration/doctype.rs::dtd_03"
UNKNOWN = 'tests/integration/main.rs::fuzz_cases!{ "<!DOCTYPE>" }'


def test_a_deleting_attempt_and_a_cannot_tell_one_lose_to_a_clean_one_in_that_order() -> None:
    # xmlparser, `--attempts 3`: the smallest change deletes `test!(dtd_03, …)`, the next removes a macro invocation
    # whose tests the App cannot name, the largest keeps every test. Before the reproductions and the size.
    deleting = _cand(1, 3, reproduction=_valid(), dropped=DroppedTests(tests=[DTD]))
    doubtful = _cand(2, 4, reproduction=_valid(), dropped=DroppedTests(uncertain=[UNKNOWN]))
    clean = _cand(3, 30, dropped=DroppedTests())
    choice = choose([deleting, doubtful, clean])
    assert [c.index for c in choice.ranking] == [3, 2, 1]
    assert choice.reasons[1] == f"not chosen: it drops existing tests: {DTD}; attempt 3 drops none"
    assert choice.reasons[2] == (
        f"not chosen: whether it drops tests cannot be told (gone: {UNKNOWN}); attempt 3 drops none"
    )
    # Without a clean attempt, the doubt still beats a certain drop; the reason says what the App knows.
    choice = choose([deleting, doubtful])
    assert choice.chosen is doubtful
    assert choice.reasons[1] == f"not chosen: it drops existing tests: {DTD}; attempt 2 drops none the App can name"
    assert choice.reasons[2].startswith(
        f"chosen: the repository's tests pass, it passes 1 of 2 valid reproduction tests, but whether it drops "
        f"tests cannot be told (gone: {UNKNOWN}), 4 lines changed"
    )
    assert dropped_notes(doubtful)[0] == (
        f"whether it drops tests cannot be told: gone or changed are test declarations the App cannot name ({UNKNOWN})"
    )
    # A test file the App cannot read is a doubt too; failing tests still come first.
    unreadable = _cand(4, 2, dropped=DroppedTests(unparsed=["tests/big_test.go"]))
    assert [c.index for c in choose([unreadable, clean, _cand(5, 1, test=False)]).ranking] == [3, 4, 5]
    assert "cannot be told (unreadable: tests/big_test.go)" in choose([unreadable, clean]).reasons[4]


def test_a_chosen_change_that_drops_tests_says_so_and_what_could_not_be_checked() -> None:
    names = [f"tests/test_a.py::test_{n}" for n in range(12)]
    gone = DroppedTests(tests=names, unparsed=["tests/test_b.py"], unchecked=["web/app.test.js"])
    dropping, broken = _cand(1, 3, dropped=gone), _cand(2, 2, test=False)
    choice = choose([dropping, broken])
    assert choice.chosen is dropping
    shown = ", ".join(names[:10]) + " and 2 more"
    assert choice.reasons[1] == (
        f"chosen: the repository's tests pass, but it drops existing tests: {shown}, 3 lines changed; "
        "the best of 2 acceptable attempts"
    )
    assert dropped_notes(dropping) == [
        "whether it drops tests in tests/test_b.py cannot be told: "
        "not readable as code of its language before or after the change, or too costly to scan",
        "web/app.test.js: not checked for dropped tests (a language the App does not scan)",
    ]
    [row, _] = _rows(attempts_table(choice, [dropping, broken], {}))
    assert ":grey_question: whether it drops tests in tests/test_b.py cannot be told" in row
    assert ":grey_question: web/app.test.js: not checked for dropped tests" in row


def test_without_a_test_command_the_ranking_skips_it() -> None:
    choice = choose([_cand(1, 9, test=None), _cand(2, 3, test=None)])
    assert choice.chosen is not None and choice.chosen.index == 2
    assert "tests" not in choice.reasons[2]


def test_unsubmitted_empty_and_refused_attempts_are_never_ranked() -> None:
    limits = Candidate(index=1, run_id="a", exit_status="LimitsExceeded")
    crashed = Candidate(index=2, run_id="b", exit_status="error", error="sandbox_failed: engine gone")
    empty = Candidate(index=3, run_id="c", exit_status="Submitted", change=Change("", [], []))
    refused = _cand(4, 1, refused=[".github/workflows/ci.yml"])
    choice = choose([limits, crashed, empty, refused])
    assert choice.chosen is None and choice.ranking == []
    assert choice.reasons == {
        1: "not chosen: it did not submit a change (LimitsExceeded)",
        2: "not chosen: it did not submit a change (error: sandbox_failed: engine gone)",
        3: "not chosen: it submitted without changing any file",
        4: "not chosen: its change touches what mini-fix may not push: .github/workflows/ci.yml",
    }


def test_the_table_has_a_row_per_attempt_with_its_verdicts_and_link() -> None:
    good = _cand(1, 6, reproduction=_valid(), temperature=0.0)
    claimed = _cand(2, 3, reproduction=_passes_before(), temperature=0.7, cross={1: False})
    refused = _cand(3, 2, refused=["secret|dir/x"], temperature=1.0)
    cands = [good, claimed, refused]
    table = attempts_table(choose(cands), cands, {1: "https://bot.example/runs/run1", 2: None})
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 3
    assert rows[0].startswith("| 1 | 0.0 | submitted | :white_check_mark: passed | :white_check_mark: fails before")
    assert "| 1 of 1 |" in rows[0] and "**yes**" in rows[0] and "| 0 of 1 |" in rows[1]
    assert "[trajectory](https://bot.example/runs/run1)" in rows[0]
    assert "passes before the fix too (no credit)" in rows[1] and rows[1].endswith("| — |")
    assert "| no: it passes 0 of 1 valid reproduction tests, attempt 1 passes 1 |" in rows[1]
    assert "| no: its change touches what mini-fix may not push: secret&#124;dir/x |" in rows[2]
    assert "refused (secret&#124;dir/x)" in rows[2] and rows[2].count(" | ") == 8


def test_evidence_shows_both_runs_of_a_valid_reproduction_only() -> None:
    shown = evidence(_cand(1, reproduction=_valid()))
    assert "`tests/test_issue.py`" in shown and "`python3 -m unittest tests/test_issue.py`" in shown
    assert shown.index("AssertionError: -1 != 5") < shown.index("Ran 1 test\nOK")
    assert evidence(_cand(2, reproduction=_passes_before())) == ""
    assert evidence(_cand(3)) == ""


def test_model_text_in_the_evidence_cannot_mention_or_close() -> None:
    rep = _valid()
    rep.before = "@admin Fixes #12\n```\nescape"
    shown = evidence(_cand(1, reproduction=rep))
    assert "@admin" not in shown and "Fixes #12" not in shown
    assert "````" in shown  # a fence longer than the output's own


def _verdict(index: int, verdict: str, summary: str, lines: int = 5, code: int = 0) -> Candidate:
    test = {"command": "npm test", "returncode": code, "passed": verdict == "passed", "verdict": verdict,
            "summary": summary}  # fmt: skip
    return Candidate(index=index, run_id=f"run{index}", exit_status="Submitted", change=_diff(lines), test=test)


def test_tests_that_could_not_run_or_ran_none_are_no_evidence_between_pass_and_fail() -> None:
    broken = _verdict(1, "could not run", "Maven could not resolve a dependency: Non-resolvable import POM", 1)
    none_ran = _verdict(2, "no tests ran", "unittest: Ran 0 tests, OK", 2)
    failing = _verdict(3, "failed", "the test script: In total, 47455 of 47456 tests passed", 3)
    passing = _verdict(4, "passed", "pytest: 3 passed", 9)
    choice = choose([broken, none_ran, failing, passing])
    assert [c.index for c in choice.ranking] == [4, 1, 2, 3]  # no evidence ties: the smaller change first
    assert (
        "could not run: Maven could not resolve" in choice.reasons[1] and "and pass on attempt 4" in choice.reasons[1]
    )
    assert "ran no test (unittest: Ran 0 tests, OK)" in choice.reasons[2]
    assert "tests fail on it (exit 0), and pass on attempt 4" in choice.reasons[3]
    # Every attempt could not run (a broken setup): that decides nothing, the next counts do.
    alike = [_verdict(1, "could not run", "x", 7), _verdict(2, "could not run", "x", 3)]
    picked = choose(alike)
    assert picked.chosen is alike[1] and "could not run" in picked.reasons[2]
    table = attempts_table(choice, [broken, none_ran, failing, passing], {})
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert ":grey_question: could not run the tests: Maven could not resolve" in rows[0]
    assert ":grey_question: no tests ran" in rows[1] and ":x: failed (exit 0)" in rows[2]


def test_a_reproduction_that_could_not_run_says_so_in_the_table() -> None:
    detail = "could not run the tests on the base commit: the Python module `semver` is not installed"
    c = _cand(1, reproduction=Reproduction(files=["tests/test_x.py"], detail=detail))
    table = attempts_table(choose([c]), [c], {})
    assert f":grey_question: {detail}" in table and "not checked" not in table


def test_evidence_says_what_the_runner_counted_before_and_after() -> None:
    rep = _valid()
    rep.before_verdict, rep.after_verdict = "failed (pytest: 1 failed, 2 passed; exit 1)", "passed (pytest: 3 passed)"
    shown = evidence(_cand(1, reproduction=rep))
    assert "it **fails** (as the issue describes): failed (pytest: 1 failed, 2 passed; exit 1);" in shown
    assert "it **passes**: passed (pytest: 3 passed)." in shown
