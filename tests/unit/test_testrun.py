"""The verdict read from a test run's own output (bot/pipeline/attempts/testrun.py), on real runners' output.

The samples in tests/fixtures/runner_output were captured in mini-fix-sandbox:latest without a network (its
capture.sh says how); mocha, jest, vitest, Gradle and big.js's runner are not in the image, so theirs are written
by hand in the form those runners print; tape's (tape_*) come from deep-equal 1.0.1's `npm test` on a host's node.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.pipeline.attempts import testrun
from bot.pipeline.attempts.missing import missing_tool
from bot.pipeline.attempts.testrun import FAILED, LINE_CHARS, NO_TESTS, NOT_RUN, PASSED, TAIL_CHARS, provided, read

SAMPLES = Path(__file__).parents[1] / "fixtures" / "runner_output"


def sample(name: str) -> tuple[str, int]:
    """A captured output and the exit code captured with it."""
    output = (SAMPLES / f"{name}.out").read_text(encoding="utf-8", errors="replace")
    return output, int((SAMPLES / f"{name}.rc").read_text())


@pytest.mark.parametrize(
    ("name", "verdict", "said"),
    [
        # pytest
        ("pytest_passed", PASSED, "pytest: 3 passed"),
        ("pytest_failed", FAILED, "1 failed, 2 passed"),
        ("pytest_failed_verbose", FAILED, "1 failed, 2 passed"),
        ("pytest_no_tests", NO_TESTS, "3 deselected"),
        ("pytest_missing_module", NOT_RUN, "the Python module `semver` is not installed"),
        ("pytest_module_missing", NOT_RUN, "pytest is not installed in the sandbox"),
        ("pytest_not_installed", NOT_RUN, "the Python module `no_such_runner_pytest` is not installed"),
        ("pytest_bad_plugin_option", NOT_RUN, "pytest does not know `--cov=calc`"),
        # the test imports a name its fix adds: a real failure before the fix, not a sandbox problem
        ("pytest_import_name", FAILED, "ImportError: cannot import name 'sub' from 'calc'"),
        # unittest
        ("unittest_passed", PASSED, "Ran 3 tests"),
        ("unittest_failed", FAILED, "FAILED (failures=1, skipped=1)"),
        ("unittest_zero", NO_TESTS, "Ran 0 tests"),  # a pytest project run by `unittest discover`: exit 0
        ("unittest_missing_module", NOT_RUN, "the Python module `semver` is not installed"),
        # go test
        ("go_passed", PASSED, "1 package ok"),
        ("go_root_pattern", PASSED, "1 package ok"),
        ("go_failed", FAILED, "1 failed"),
        ("go_failed_verbose", FAILED, "1 tests passed, 1 failed"),
        ("go_one_failed", FAILED, "1 failed"),
        ("go_no_tests_to_run", NO_TESTS, "1 without tests"),
        ("go_no_test_files", NO_TESTS, "1 without tests"),
        ("go_build_failed", FAILED, "[build failed]"),
        ("go_missing_dependency", NOT_RUN, "`github.com/google/go-cmp/cmp` is not downloaded"),
        # go.mod's requirement never downloaded (setup failed or did not run): the image's GOPROXY=off says so
        ("go_module_not_downloaded", NOT_RUN, "the Go module `github.com/russross/blackfriday/v2@v2.1.0` is not"),
        # cargo test
        ("cargo_passed", PASSED, "3 passed; 0 failed"),
        ("cargo_one", PASSED, "1 passed; 0 failed"),
        ("cargo_two_filters", PASSED, "2 passed; 0 failed"),
        ("cargo_failed", FAILED, "1 passed; 1 failed"),
        ("cargo_filtered_none", NO_TESTS, "0 passed; 0 failed"),
        ("cargo_compile_error", FAILED, "could not compile"),
        ("cargo_missing_dependency", NOT_RUN, "the Rust dependency `serde` is not available"),
        ("cargo_rustc_too_old", NOT_RUN, "needs rustc 1.80"),
        # Maven Surefire (-q prints nothing when the tests pass: the exit code decides)
        ("mvn_passed", PASSED, "Tests run: 2, Failures and errors: 0"),
        ("mvn_passed_quiet", PASSED, "exit 0 (no runner's summary"),
        ("mvn_one_class", PASSED, "exit 0 (no runner's summary"),
        ("mvn_failed", FAILED, "Tests run: 2, Failures and errors: 1"),
        ("mvn_failed_quiet", FAILED, "Tests run: 2, Failures and errors: 1"),
        ("mvn_repro_two_classes", FAILED, "Tests run: 2, Failures and errors: 1"),
        ("mvn_repro_no_match", NO_TESTS, "the Surefire plugin ran no test"),
        ("mvn_no_such_test", NO_TESTS, "No tests were executed!"),
        ("mvn_compile_error", FAILED, "COMPILATION ERROR"),
        ("mvn_import_pom", NOT_RUN, "Maven could not resolve a dependency: Non-resolvable import POM"),
        # Gradle
        ("gradle_failed", FAILED, "3 tests completed, 1 failed"),
        ("gradle_offline_dependency", NOT_RUN, "Gradle could not resolve a dependency"),
        # node's test runner, TAP and spec
        ("node_test_passed", PASSED, "tests 2, pass 2"),
        ("node_test_spec_passed", PASSED, "tests 2, pass 2"),
        ("node_test_failed", FAILED, "pass 1, fail 1"),
        ("node_test_two_files", FAILED, "pass 1, fail 1"),
        ("npm_test_failed", FAILED, "pass 1, fail 1"),
        ("node_test_zero", NO_TESTS, "tests 0"),
        ("node_test_missing_package", NOT_RUN, "the package `chai` is not installed"),
        # tape 3 (deep-equal 1.0.1's `npm test`, on the host's node): TAP totals with two spaces (`# pass  21`)
        ("tape_passed", PASSED, "tape: tests 21, pass 21"),
        ("tape_failed", FAILED, "tape: tests 21, pass 20, fail 1"),
        # mocha, jest, vitest
        ("mocha_passed", PASSED, "4 passing"),
        ("mocha_failed", FAILED, "3 passing, 1 failing"),
        ("mocha_no_files", NO_TESTS, "No test files found"),
        ("mocha_missing_package", NOT_RUN, "the package `chai` is not installed"),
        ("jest_passed", PASSED, "Tests: 6 passed, 6 total"),
        ("jest_failed", FAILED, "Tests: 1 failed, 5 passed, 6 total"),
        ("jest_no_tests", NO_TESTS, "No tests found"),
        ("jest_missing_package", NOT_RUN, "the package `node-fetch` is not installed"),
        ("jest_suite_syntax_error", FAILED, "Test suite failed to run"),
        ("vitest_passed", PASSED, "Tests 5 passed (5)"),
        ("vitest_failed", FAILED, "Tests 1 failed | 4 passed (5)"),
        ("vitest_no_files", NO_TESTS, "No test files found"),
        ("vitest_missing_package", NOT_RUN, "the package `undici` is not installed"),
        # big.js's own runner exits 0 whatever happens
        ("bigjs_passed", PASSED, "47456 of 47456 tests passed"),
        ("bigjs_one_failed", FAILED, "47455 of 47456 tests passed"),
        # a missing tool, named as the shell names it (not `npm`)
        ("npm_mocha_not_found", NOT_RUN, "`mocha` is not found in the sandbox image (exit 127)"),
        ("yarn_command_not_found", NOT_RUN, "`mocha` is not found in the sandbox image"),
        ("bash_not_found", NOT_RUN, "`mocha` is not found"),
        ("sh_not_found", NOT_RUN, "`jest` is not found"),
        ("npx_mocha_offline", NOT_RUN, "npm needed the network to fetch a package (ENOTCACHED)"),
        ("npm_missing_script", NOT_RUN, 'package.json has no "test" script'),
    ],
)
def test_the_runners_own_summary_decides(name: str, verdict: str, said: str) -> None:
    output, code = sample(name)
    reading = read(output, code, "npm test")
    assert (reading.verdict, said in reading.why) == (verdict, True), reading.why
    assert reading.ok is (verdict == PASSED)


def test_every_sample_is_in_the_table() -> None:
    # A sample added to capture.sh (or by hand) without a verdict above would test nothing.
    named = {p.stem for p in SAMPLES.glob("*.out")}
    table = test_the_runners_own_summary_decides.pytestmark[0].args[1]  # type: ignore[attr-defined]
    assert named == {row[0] for row in table}
    assert all((SAMPLES / f"{name}.rc").is_file() for name in named)


def test_zero_tests_with_exit_0_is_never_a_pass() -> None:
    output, code = sample("unittest_zero")
    assert code == 0
    reading = read(output, code, "python3 -m unittest discover -t . -s .")
    assert reading.verdict == NO_TESTS and not reading.ok
    assert reading.fields() == {"passed": False, "verdict": NO_TESTS, "summary": reading.why}


def test_a_summary_that_counts_failures_fails_whatever_the_exit_code() -> None:
    output, code = sample("bigjs_one_failed")
    assert code == 0
    reading = read(output, code, "npm test")
    assert (reading.verdict, reading.passed, reading.failed) == (FAILED, 47455, 1)
    assert "exit 0, but the summary counts failures" in reading.why


def test_a_summary_never_turns_a_failing_exit_code_into_a_pass() -> None:
    output, _ = sample("pytest_passed")
    reading = read(output, 1, "pytest")  # e.g. a coverage threshold after the tests
    assert reading.verdict == FAILED and "exit 1" in reading.why


def test_a_missing_tool_is_named_from_the_shells_message() -> None:
    for said, code in [
        ("sh: 1: mocha: not found", 127),
        ("/bin/sh: 1: mocha: not found", 127),
        ("/bin/sh: mocha: not found", 127),
        ("bash: line 1: mocha: command not found", 127),
        ("bash: mocha: command not found", 127),
        ("/usr/bin/env: 'mocha': No such file or directory", 127),
        ("error Command failed with exit code 127.\n/bin/sh: 1: mocha: not found", 1),
    ]:
        reading = read(f"> pkg@1.0.0 test\n{said}\n", code, "npm test")
        assert (reading.verdict, reading.missing_tool) == (NOT_RUN, "mocha"), said
        assert reading.text().startswith("could not run the tests: `mocha` is not found")
    assert missing_tool(127, "sh: 1: mocha: not found\n", "npm test") == "mocha"  # the PR's checks table too


def test_a_missing_module_counts_only_when_no_test_passed() -> None:
    output = "E   ModuleNotFoundError: No module named 'yaml'\n1 failed, 4 passed in 0.20s\n"
    assert read(output, 1, "pytest").verdict == FAILED  # tests ran: one of them needed yaml
    reading = read("E   ModuleNotFoundError: No module named 'yaml.x'\n1 error in 0.1s\n", 2, "pytest")
    assert (reading.verdict, reading.missing_module) == (NOT_RUN, "yaml.x")


def test_a_timeout_is_a_failure_with_what_ran() -> None:
    reading = read("..F", -1, "pytest", timed_out=True)
    assert reading.verdict == FAILED and "timed out" in reading.why


def test_no_summary_leaves_it_to_the_exit_code() -> None:
    assert read("building...\ndone\n", 0).verdict == PASSED
    reading = read("building...\nboom\n", 3)
    assert reading.verdict == FAILED and "exit 3" in reading.why


def test_only_the_end_of_the_output_is_read_and_lines_are_cut() -> None:
    early = "E   ModuleNotFoundError: No module named 'gone'\n"
    padding = ("x" * 99 + "\n") * (TAIL_CHARS // 100 + 10)
    assert read(early + padding + "3 passed in 0.1s\n", 0).verdict == PASSED
    assert read(early + padding, 0).verdict == PASSED  # the early line is past what is read
    huge = "1 passed, " * 100_000 + "in 0.1s"
    lines = testrun._lines(huge + "\nok\n")
    assert max(len(line) for line in lines) <= LINE_CHARS
    assert read(huge, 0).verdict in (PASSED, NO_TESTS)


def test_quoted_output_cannot_break_out_of_the_reasons_code_spans() -> None:
    reading = read("Error: Cannot find module 'x`y`@here'\n", 1, "node t.js")
    assert reading.verdict == NOT_RUN and reading.why.count("`") == 2


def test_the_verdict_of_test_dicts_old_and_new() -> None:
    assert testrun.of({"passed": True, "returncode": 0}) == PASSED
    assert testrun.of({"passed": False, "returncode": 1}) == FAILED
    assert testrun.of({"passed": False, "returncode": 127, "missing_tool": "go"}) == NOT_RUN
    assert testrun.of({"passed": False, "returncode": -1, "output": "not run: ..."}) == NOT_RUN
    assert testrun.of({"passed": False, "returncode": 0, "verdict": NO_TESTS}) == NO_TESTS
    assert testrun.of(None) == NOT_RUN


def test_a_module_the_change_adds_is_provided_by_it() -> None:
    paths = ["src/calc/newmod.py", "calc2/pkg/__init__.py", "tests/test_new.py"]
    assert provided("calc.newmod", paths) and provided("pkg", paths)
    assert not provided("semver", paths) and not provided("calc", paths) and not provided("../x", paths)


def test_a_package_the_change_itself_imports_is_its_failure_not_could_not_run() -> None:
    output, code = sample("pytest_missing_module")
    assert read(output, code, "pytest").verdict == NOT_RUN
    adds_import = "+++ b/calc.py\n+import semver\n"
    reading = read(output, code, "pytest", changed=adds_import)
    assert reading.verdict == FAILED and reading.why.startswith("its change uses `semver`, which the sandbox")
    assert read(output, code, "pytest", changed="+++ b/calc.py\n+import semver_extra\n").verdict == NOT_RUN
    output, code = sample("npm_mocha_not_found")
    reading = read(output, code, "npm test", changed='+++ b/package.json\n+    "test": "mocha test/"\n')
    assert reading.verdict == FAILED and "missing_tool" not in reading.fields()  # the PR says failed, not missing


def test_what_a_diff_introduces_is_read_from_its_added_lines_as_whole_words() -> None:
    assert testrun.introduced("no_such_module", "--- a/x.py\n+++ b/x.py\n+import no_such_module\n")
    assert testrun.introduced("yaml.x", "+from yaml import x\n")
    assert not testrun.introduced("chai", "+const c = require('chai-as-promised');\n")
    assert not testrun.introduced("semver", "-import semver\n import semver\n+++ b/semver.py\n")
