"""What a test run's own output says: passed, failed, no tests ran, or could not run the tests (and why).

The exit code alone misleads: `python3 -m unittest discover` on a pytest project runs 0 tests and exits 0; big.js's
runner prints "47455 of 47456 tests passed" and exits 0; `No module named pytest`, Maven's `Non-resolvable import
POM` or `sh: 1: mocha: not found` fail before any test runs. So the host reads the runner's own summary where it
prints one (pytest, unittest, go test, cargo test, Maven Surefire, Gradle, node's test runner in TAP or spec form, tape,
mocha, jest, vitest, "N of M tests passed"), and the signs that nothing could run (a missing tool, module,
dependency, script or toolchain):

1. no test is known to have passed, and the output says a tool, module, dependency or toolchain is missing:
   "could not run the tests: <why>" (never a failure, never a pass);
2. a summary counts tests that ran: failed when it counts a failure (whatever the exit code) or the exit code is not
   0, else passed;
3. the tests did not build or load (a compile error, a collection error, a test file that failed to import): failed;
4. a summary says no test ran (0 tests, nothing collected, no test files): "no tests ran", never a pass;
5. no summary: the exit code decides.

The output comes from the sandbox and is untrusted: only its last `TAIL_CHARS` are read, each line cut at
`LINE_CHARS`, every pattern is a simple line-anchored one (no nested repetition), and what is quoted back is short.
A summary can only make the exit code's verdict worse, never turn a non-zero exit into a pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bot.pipeline.attempts.missing import CODES, describe, missing_tool, shell_said

PASSED = "passed"
FAILED = "failed"
NO_TESTS = "no tests ran"
NOT_RUN = "could not run"
VERDICTS = (PASSED, FAILED, NO_TESTS, NOT_RUN)

TAIL_CHARS = 64 * 1024  # of the output read (summaries are printed last)
LINE_CHARS = 400  # of one line looked at
QUOTE_CHARS = 160  # of a line quoted back in a reason
MAX_DIFF_CHARS = 1024 * 1024  # of a change's diff searched for what it introduced

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,20}[A-Za-z]")


@dataclass(frozen=True)
class Reading:
    """The verdict the host read from one test run."""

    verdict: str  # one of VERDICTS
    why: str  # in a reviewer's words: the summary read, or why nothing ran
    runner: str = ""  # whose summary was read ("pytest", "go test", ...), "" when none
    passed: int | None = None  # tests the summary counts as passed (None: no summary)
    failed: int | None = None  # tests it counts as failed or errored
    missing_tool: str | None = None  # exit 127/126: the program the shell could not run
    missing_module: str | None = None  # a Python module the run could not import (dotted name)
    missing: str | None = None  # the module, package or dependency it said is missing, by name

    @property
    def ok(self) -> bool:
        """Tests ran and none failed."""
        return self.verdict == PASSED

    def text(self) -> str:
        """`passed (pytest: 3 passed)`, `could not run the tests: ...`."""
        if self.verdict == NOT_RUN:
            return f"could not run the tests: {self.why}"
        return f"{self.verdict} ({self.why})" if self.why else self.verdict

    def fields(self) -> dict[str, Any]:
        """What a `test` verdict dict carries from it."""
        found: dict[str, Any] = {"passed": self.ok, "verdict": self.verdict, "summary": self.why}
        if self.missing_tool and self.verdict == NOT_RUN:  # not when its own change is what runs the missing tool
            found["missing_tool"] = self.missing_tool
        return found


@dataclass
class _Counts:
    """What the runners' summaries in one output add up to."""

    runners: list[str] = field(default_factory=list)
    passed: int = 0
    failed: int = 0
    load_errors: int = 0  # test files or packages that did not build or import
    said: list[str] = field(default_factory=list)  # the summaries, as read

    def add(self, runner: str, passed: int, failed: int, said: str, load_errors: int = 0) -> None:
        if runner not in self.runners:
            self.runners.append(runner)
        self.passed += passed
        self.failed += failed
        self.load_errors += load_errors
        self.said.append(said)

    @property
    def found(self) -> bool:
        return bool(self.runners)

    def summary(self) -> str:
        said = "; ".join(dict.fromkeys(_clean(s) for s in self.said))
        return f"{', '.join(self.runners)}: {_cut(said)}"


def read(
    output: str, returncode: int | None, command: str = "", *, timed_out: bool = False, changed: str = ""
) -> Reading:
    """The verdict of a test run from its exit code and the end of its output. `changed`: the diff of the change
    the run tested (the host's own); a missing tool, module or package that its added lines name is the change's
    doing (an import of a package that is not installed), so a failure, not "could not run"."""
    reading = _read(output, returncode, command, timed_out)
    name = reading.missing_tool or reading.missing
    if reading.verdict == NOT_RUN and name and changed and introduced(name, changed):
        why = f"its change uses `{name}`, which the sandbox does not have ({reading.why})"
        return Reading(FAILED, _cut(why, QUOTE_CHARS * 2), reading.runner, 0, 0, reading.missing_tool, reading.missing)
    return reading


def _read(output: str, returncode: int | None, command: str, timed_out: bool) -> Reading:
    lines = _lines(output)
    counts = _count(lines)
    tool = missing_tool(returncode, output, command)
    known_pass = counts.passed > 0
    if not known_pass and (tool or (returncode not in (0, None) and (tool := _shell_not_found(lines)))):
        if returncode in CODES:
            why = describe(tool, returncode)  # `mocha` is not found in the sandbox image (exit 127), so no test ran
        else:  # a script that went on after the shell's `not found` (yarn exits 1)
            why = f"`{tool}` is not found in the sandbox image, so no test ran"
        return Reading(NOT_RUN, why, missing_tool=tool)
    if not known_pass and (missing := _missing(lines)) is not None:
        why, module, name = missing
        return Reading(NOT_RUN, why, ", ".join(counts.runners), missing_module=module, missing=name)
    runner = ", ".join(counts.runners)
    ran = counts.passed + counts.failed
    if timed_out:
        return Reading(FAILED, "it timed out" + (f"; {counts.summary()}" if ran else ""), runner)
    if ran:
        if counts.failed or returncode != 0:
            exit_note = f"; exit {returncode}" if returncode != 0 else "; exit 0, but the summary counts failures"
            return Reading(FAILED, counts.summary() + exit_note, runner, counts.passed, counts.failed)
        return Reading(PASSED, counts.summary(), runner, counts.passed, 0)
    load = _load_error(lines)
    if counts.load_errors or load:
        what = _cut(_clean(load)) if load else counts.summary()
        return Reading(FAILED, f"the tests did not build or load: {what}", runner, 0, 0)
    if counts.found or (none := _no_tests(lines)):
        what = counts.summary() if counts.found else _cut(_clean(none))
        return Reading(NO_TESTS, what, runner, 0, 0)
    if returncode == 0:
        return Reading(PASSED, "exit 0 (no runner's summary found in the output)")
    return Reading(FAILED, f"exit {returncode} (no runner's summary found in the output)")


def of(test: dict[str, Any] | None) -> str:
    """The verdict of a `test` dict, including those written before verdicts were read from the output."""
    if not test:
        return NOT_RUN
    verdict = test.get("verdict")
    if verdict in VERDICTS:
        return str(verdict)
    if test.get("passed"):
        return PASSED
    if test.get("missing_tool") or test.get("returncode") == -1:
        return NOT_RUN
    return FAILED


def introduced(name: str, diff: str) -> bool:
    """Whether a line the diff adds names `name` as a whole word (for a dotted Python module, its top package)."""
    words = {name, name.split(".")[0]} if "." in name and "/" not in name else {name}
    patterns = [re.compile(rf"(?<![\w.@/-]){re.escape(w)}(?![\w-])") for w in words if len(w) > 1]
    for line in diff[:MAX_DIFF_CHARS].splitlines():
        if line.startswith("+") and not line.startswith("+++") and any(p.search(line[:LINE_CHARS]) for p in patterns):
            return True
    return False


def provided(module: str, paths: Iterable[str]) -> bool:
    """Whether a change's files hold the Python module `module` (a reproduction test that imports a module its fix
    adds fails before the fix for a real reason, not because the sandbox lacks something)."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return False
    stem = "/".join(parts)
    wanted = (f"{stem}.py", f"{stem}/__init__.py")
    return any(p == w or p.endswith("/" + w) for p in paths for w in wanted)


# --- the runners' summaries ------------------------------------------------------------------------------------------

_PYTEST_WORDS = r"(?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|rerun|subtests passed)"
_PYTEST = re.compile(rf"^=*\s?((?:\d{{1,9}} {_PYTEST_WORDS}(?:, )?){{1,10}}|no tests ran) in \d[\d.]{{0,12}} ?s")
_PYTEST_PART = re.compile(r"(\d{1,9}) ([a-z]{4,10})")
_PYTEST_COLLECTING = re.compile(
    r"^(?:Interrupted: \d{1,9} errors? during collection|=+ ERRORS =+$|_+ ERROR collecting )"
)
_UNITTEST_RAN = re.compile(r"^Ran (\d{1,9}) tests? in ")
_UNITTEST_END = re.compile(r"^(OK|FAILED|NO TESTS RAN)(?: \(([\w=, ]{0,200})\))?\s*$")
_UNITTEST_LOAD = re.compile(r"^ERROR: \S{1,300} \(unittest\.loader\._FailedTest")
# `ok  \tpkg\t0.01s`, `FAIL\tpkg\t0.01s`, `FAIL\tpkg [build failed]`, `?   \tpkg\t[no test files]` (a tab after the
# status: TAP's `ok 1 - name` is not one)
_GO_PKG = re.compile(r"^(ok|FAIL|\?) {0,4}\t(\S{1,300})(?:[\t ](.{0,80}))?$")
_GO_TEST = re.compile(r"^\s{0,40}--- (PASS|FAIL|SKIP): \S{1,300}")
_CARGO = re.compile(r"^test result: (?:ok|FAILED)\. (\d{1,9}) passed; (\d{1,9}) failed;")
_SUREFIRE = re.compile(
    r"^(?:\[(?:INFO|ERROR|WARNING)\] )?Tests run: (\d{1,9}), Failures: (\d{1,9}), Errors: (\d{1,9}), "
    r"Skipped: (\d{1,9})(.{0,300})$"
)
_SUREFIRE_RAN = re.compile(r"^\[INFO\] --- (?:maven-)?surefire(?:-plugin)?:\S{1,40}:test ")
_GRADLE = re.compile(r"^(\d{1,9}) tests? completed, (\d{1,9}) failed")
# node's test runner (`# pass 2`, `ℹ pass 2`) and tape (`# pass  2`, two spaces: TAP's totals as tape prints them)
_NODE = re.compile(r"^(?:#|\u2139) (tests|pass|fail|cancelled|skipped|todo)( {1,2})(\d{1,9})\s*$")
_MOCHA = re.compile(r"^\s{0,8}(\d{1,9}) (passing|failing|pending)(?: \(\d[\w.]{0,12}\))?\s*$")
_JEST = re.compile(r"^Tests:\s{1,20}((?:\d{1,9} [a-z]{4,9}, ){0,6})(\d{1,9}) total\s*$")
_JEST_SUITES = re.compile(r"^Test Suites:\s{1,20}(?:(\d{1,9}) failed, )?.{0,80}?(\d{1,9}) total\s*$")
_VITEST = re.compile(
    r"^\s{0,8}Tests\s{1,8}((?:\d{1,9} [a-z]{4,9}(?: \| )?){1,6}|no tests)(?:\s{0,4}\((\d{1,9})\))?\s*$"
)
_VITEST_FILES = re.compile(r"^\s{0,8}Test Files\s{1,8}(\d{1,9}) failed")
# big.js's runner: ` Testing abs... 143 of 143 tests passed in 4 ms`, then ` In total, 47455 of 47456 tests passed`
_OF_M = re.compile(r"^\s{0,20}(In total, |Testing \S{1,80}\.\.\. )?(\d{1,9}) of (\d{1,9}) tests? passed\b")
_PARTS = re.compile(r"(\d{1,9}) ([a-z]{4,9})")


def _count(lines: list[str]) -> _Counts:
    counts = _Counts()
    for parse in (_pytest, _unittest, _go, _cargo, _surefire, _gradle, _node, _mocha, _jest, _vitest, _of_m):
        parse(lines, counts)
    return counts


def _pytest(lines: list[str], counts: _Counts) -> None:
    last = None
    for line in lines:
        if match := _PYTEST.match(line):
            last = match
    if last is None:
        return
    parts = {name: int(n) for n, name in _PYTEST_PART.findall(last.group(1))}
    passed = parts.get("passed", 0) + parts.get("xfailed", 0)
    failed = parts.get("failed", 0) + parts.get("xpassed", 0)
    errors = parts.get("error", 0) + parts.get("errors", 0)
    collecting = any(_PYTEST_COLLECTING.match(line) for line in lines)
    if collecting and not passed and not failed:
        counts.add("pytest", 0, 0, last.group(1), load_errors=errors)
    else:
        counts.add("pytest", passed, failed + errors, last.group(1))


def _unittest(lines: list[str], counts: _Counts) -> None:
    for i, line in enumerate(lines):
        if not (ran := _UNITTEST_RAN.match(line)):
            continue
        end = next((m for m in map(_UNITTEST_END.match, lines[i + 1 : i + 4]) if m), None)
        total = int(ran.group(1))
        details = dict(_kv(end.group(2))) if end is not None and end.group(2) else {}
        failed = details.get("failures", 0) + details.get("errors", 0) + details.get("unexpected successes", 0)
        skipped = details.get("skipped", 0) + details.get("expected failures", 0)
        load = sum(1 for line in lines[:i] if _UNITTEST_LOAD.match(line))
        load = min(load, failed)
        said = f"Ran {total} tests" + (f", {end.group(0).strip()}" if end is not None else "")
        counts.add("unittest", max(total - failed - skipped, 0), failed - load, said, load_errors=load)


def _kv(text: str) -> Iterable[tuple[str, int]]:
    for item in text.split(","):
        name, _, value = item.strip().partition("=")
        if value.isdigit():
            yield name.strip(), int(value)


def _go(lines: list[str], counts: _Counts) -> None:
    ok = failed = build = no_tests = 0
    tests = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for line in lines:
        if match := _GO_TEST.match(line):
            tests[match.group(1)] += 1
        elif match := _GO_PKG.match(line):
            status, rest = match.group(1), match.group(3) or ""
            if status == "?" or "[no test files]" in rest or "[no tests to run]" in rest:
                no_tests += 1
            elif "[build failed]" in rest or "[setup failed]" in rest:
                build += 1
            elif status == "ok":
                ok += 1
            elif rest:  # FAIL <package> <time>: its tests ran and failed (or it panicked)
                failed += 1
    if not (ok or failed or build or no_tests or tests["PASS"] or tests["FAIL"]):
        return
    passed = tests["PASS"] or ok
    failures = tests["FAIL"] or failed
    said = f"{ok} package{'' if ok == 1 else 's'} ok, {failed + build} failed"
    said += f", {no_tests} without tests" if no_tests else ""
    if tests["PASS"] or tests["FAIL"]:
        said += f" ({tests['PASS']} tests passed, {tests['FAIL']} failed)"
    counts.add("go test", passed, failures, said, load_errors=build)


def _cargo(lines: list[str], counts: _Counts) -> None:
    found = [(int(m.group(1)), int(m.group(2))) for m in map(_CARGO.match, lines) if m]
    if found:
        passed, failed = sum(p for p, _ in found), sum(f for _, f in found)
        counts.add("cargo test", passed, failed, f"{passed} passed; {failed} failed ({len(found)} test binaries)")


def _surefire(lines: list[str], counts: _Counts) -> None:
    totals: list[re.Match[str]] = []
    classes: list[re.Match[str]] = []
    for line in lines:
        if match := _SUREFIRE.match(line):
            (classes if "Time elapsed" in match.group(5) else totals).append(match)
    found = totals or classes
    if not found:
        if any(_SUREFIRE_RAN.match(line) for line in lines):  # the plugin ran and printed no count: no test ran
            counts.add("surefire", 0, 0, "the Surefire plugin ran no test")
        return
    run = sum(int(m.group(1)) for m in found)
    failures = sum(int(m.group(2)) + int(m.group(3)) for m in found)
    skipped = sum(int(m.group(4)) for m in found)
    said = f"Tests run: {run}, Failures and errors: {failures}, Skipped: {skipped}"
    counts.add("surefire", max(run - failures - skipped, 0), failures, said)


def _gradle(lines: list[str], counts: _Counts) -> None:
    for line in lines:
        if match := _GRADLE.match(line):
            total, failed = int(match.group(1)), int(match.group(2))
            counts.add("gradle", max(total - failed, 0), failed, match.group(0))


def _node(lines: list[str], counts: _Counts) -> None:
    found: dict[str, int] = {}
    runner = "node --test"
    for line in lines:
        if match := _NODE.match(line):
            found[match.group(1)] = int(match.group(3))  # the last block: the run's totals
            runner = "tape" if match.group(2) == "  " else "node --test"
    if "tests" in found or "pass" in found:
        failed = found.get("fail", 0) + found.get("cancelled", 0)
        said = ", ".join(f"{k} {v}" for k, v in found.items())
        counts.add(runner, found.get("pass", 0), failed, said)


def _mocha(lines: list[str], counts: _Counts) -> None:
    found: dict[str, int] = {}
    for line in lines:
        if match := _MOCHA.match(line):
            found[match.group(2)] = int(match.group(1))
    if "passing" in found or "failing" in found:
        said = ", ".join(f"{v} {k}" for k, v in found.items())
        counts.add("mocha", found.get("passing", 0), found.get("failing", 0), said)


def _jest(lines: list[str], counts: _Counts) -> None:
    tests = suites = None
    for line in lines:
        if match := _JEST.match(line):
            tests = match
        elif match := _JEST_SUITES.match(line):
            suites = match
    if tests is None:
        return
    parts = {name: int(n) for n, name in _PARTS.findall(tests.group(1))}
    failed_suites = int(suites.group(1)) if suites is not None and suites.group(1) else 0
    passed, failed = parts.get("passed", 0), parts.get("failed", 0)
    load = failed_suites if not failed else 0  # a suite that failed with no failed test did not load
    counts.add("jest", passed, failed, tests.group(0).strip(), load_errors=load)


def _vitest(lines: list[str], counts: _Counts) -> None:
    tests = files_failed = None
    for line in lines:
        if match := _VITEST.match(line):
            tests = match
        elif match := _VITEST_FILES.match(line):
            files_failed = int(match.group(1))
    if tests is None:
        return
    parts = {name: int(n) for n, name in _PARTS.findall(tests.group(1))}
    passed, failed = parts.get("passed", 0), parts.get("failed", 0)
    load = files_failed if files_failed and not failed else 0
    counts.add("vitest", passed, failed, tests.group(0).strip(), load_errors=load)


def _of_m(lines: list[str], counts: _Counts) -> None:
    found = [m for m in map(_OF_M.match, lines) if m]
    totals = [m for m in found if m.group(1) == "In total, "]
    if not found:
        return
    parts = totals[-1:] or found  # the runner's total, else every part's count
    passed = sum(min(int(m.group(2)), int(m.group(3))) for m in parts)
    failed = sum(max(int(m.group(3)) - int(m.group(2)), 0) for m in parts)
    said = parts[-1].group(0).strip() if totals else f"{passed} of {passed + failed} tests passed"
    counts.add("the test script", passed, failed, said)


# --- could not run ----------------------------------------------------------------------------------------------------

_Why = Callable[["re.Match[str]"], str]


def _signal(pattern: str, why: str) -> tuple[re.Pattern[str], _Why, bool]:
    """A line pattern saying something is missing, the reason (`{0}`: its first group), and whether that group is
    the missing thing's name (the reason quotes it as `{0}`)."""
    return re.compile(pattern), (lambda m: why.format(*map(_clean, m.groups()))), "`{0}`" in why


_RUNNER_MISSING = re.compile(r"No module named (pytest|py\.test|nose2?|tox)\s*$")
_PY_MISSING = re.compile(r"^(?:E\s{1,10})?(?:ModuleNotFoundError|ImportError): No module named '([\w.]{1,200})'")
_PY_MINUS_M = re.compile(r"^\S{0,200}python[\d.]{0,6}: No module named ([\w.]{1,200})\s*$")
_MISSING = [
    # Python
    _signal(
        r"^(?:pytest|py\.test|__main__\.py): error: unrecognized arguments: (.{1,120})",
        "pytest does not know `{0}` (an option of a plugin that is not installed)",
    ),
    # JavaScript
    _signal(r"Cannot find (?:module|package) '([^'./][^']{0,120})'", "the package `{0}` is not installed"),
    _signal(r"^npm (?:ERR!|error) [Mm]issing script: \"?([\w:.-]{1,60})", 'package.json has no "{0}" script'),
    _signal(
        r"^npm (?:ERR!|error) code (EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ENETUNREACH|ENOTCACHED|ETIMEDOUT)\b",
        "npm needed the network to fetch a package ({0}); it is not installed",
    ),
    _signal(r"^error Command \"([\w.@/-]{1,80})\" not found", "`{0}` is not installed (yarn)"),
    _signal(r"ERR_PNPM_\w{0,40} {1,4}Command \"([\w.@/-]{1,80})\" not found", "`{0}` is not installed (pnpm)"),
    # Go
    _signal(
        r"no required module provides package ([^\s;]{1,200})", "the Go dependency providing `{0}` is not downloaded"
    ),
    _signal(
        r"missing go\.sum entry for module providing package (\S{1,200})",
        "the Go dependency providing `{0}` is not downloaded (missing go.sum entry)",
    ),
    _signal(
        r"^go: (?:go\.mod|module \S{1,200}) requires go >= ?([\d.]{1,20})",
        "the project needs Go {0}, newer than the sandbox's",
    ),
    _signal(r"toolchain not available", "the project's Go toolchain is not available in the sandbox"),
    _signal(r"^go: updates to go\.mod needed", "go.mod needs updates (`go mod tidy`) that need the network"),
    _signal(r"dial tcp: lookup (\S{1,120})", "a Go dependency had to be downloaded from {0}; there is no network"),
    _signal(
        r"(\S{1,200}@v[\w.+-]{1,80}): module lookup disabled by GOPROXY=off",
        "the Go module `{0}` is not downloaded (the setup did not fetch it; the tests run without a network)",
    ),
    _signal(r"cannot find package \"(\S{1,200})\" in any of", "the Go package `{0}` is not downloaded"),
    # Rust
    _signal(r"^error: failed to get `([\w.-]{1,80})` as a dependency", "the Rust dependency `{0}` is not available"),
    _signal(r"no matching package named `([\w.-]{1,80})` found", "the Rust dependency `{0}` is not available"),
    _signal(r"failed to load source for dependency `([\w.-]{1,80})`", "the Rust dependency `{0}` is not available"),
    _signal(
        r"attempting to make an HTTP request, but --offline was specified",
        "cargo needed the network to fetch a dependency",
    ),
    _signal(r"requires rustc ([\d.]{1,20})", "the project needs rustc {0}, newer than the sandbox's"),
    _signal(r"feature `([\w-]{1,40})` is required", "the project needs a newer cargo (feature `{0}`)"),
    _signal(r"lock file version (\d{1,3}) requires", "Cargo.lock version {0} needs a newer cargo"),
    # Java
    _signal(r"(Non-resolvable (?:import|parent) POM\b.{0,100})", "Maven could not resolve a dependency: {0}"),
    _signal(r"(Could not resolve dependencies for project .{0,100})", "Maven could not resolve a dependency: {0}"),
    _signal(r"(Could not transfer artifact .{0,100})", "Maven could not resolve a dependency: {0}"),
    _signal(r"(Failed to read artifact descriptor for .{0,100})", "Maven could not resolve a dependency: {0}"),
    _signal(
        r"(Plugin \S{1,200} or one of its dependencies could not be resolved)",
        "Maven could not resolve a dependency: {0}",
    ),
    _signal(r"(Cannot access \S{1,100} in offline mode.{0,60})", "Maven could not resolve a dependency: {0}"),
    _signal(
        r"(Could not resolve all (?:files|dependencies|artifacts) for .{0,100})",
        "Gradle could not resolve a dependency: {0}",
    ),
    _signal(
        r"(No cached version of \S{1,200} available for offline mode)", "Gradle could not resolve a dependency: {0}"
    ),
    _signal(r"invalid target release: (\S{1,20})", "the project needs Java {0}, newer than the sandbox's JDK"),
    _signal(r"release version (\d{1,3}) not supported", "the project needs Java {0}, newer than the sandbox's JDK"),
]
_LOAD = re.compile(
    r"^(?:error(?:\[E\d{4}\])?: could not compile|\[ERROR\] COMPILATION ERROR|\[ERROR\] .{0,200}Compilation failure|"
    r"FAIL\s{1,10}\S{1,300}\s{1,10}\[(?:build|setup) failed\]|\s{0,4}● Test suite failed to run|"
    r"_+ ERROR collecting |Interrupted: \d{1,9} errors? during collection|"
    r"ImportError: Failed to import test module|SyntaxError: |"
    r"Compilation failed; see the compiler error output)"
)
_NONE = re.compile(
    r"^(?:no tests ran\b|NO TESTS RAN\b|Ran 0 tests\b|No tests found\b|(?:Error: )?No test files found\b|"
    r"testing: warning: no tests to run|\s{0,8}0 passing\b|No tests to run\.|"
    r"\[(?:ERROR|WARNING)\] No tests (?:were executed|matching pattern)|No tests were executed)"
)
_PY_ERROR = re.compile(r"^E\s{1,10}(\w{1,40}(?:Error|Exception): .{1,200})")
_NONE_IN_LINE = re.compile(r"No tests were executed!|No tests matching pattern")


def _missing(lines: list[str]) -> tuple[str, str | None, str | None] | None:
    """Why the tests could not run, from the first line that says a module, dependency or toolchain is missing;
    the missing Python module (None when it is something else); the missing thing's name where the line gives one."""
    for line in lines:
        if match := _RUNNER_MISSING.search(line):
            return f"{match.group(1)} is not installed in the sandbox (`{_cut(_clean(line))}`)", None, None
        if match := _PY_MISSING.match(line) or _PY_MINUS_M.match(line):
            module = match.group(1)
            return f"the Python module `{module}` is not installed (`{_cut(_clean(line))}`)", module, module
        for pattern, why, named in _MISSING:
            if match := pattern.search(line):
                return _cut(why(match), QUOTE_CHARS * 2), None, (_clean(match.group(1)) if named else None)
    return None


def _shell_not_found(lines: list[str]) -> str | None:
    """The tool a shell said it could not find (`sh: 1: mocha: not found`), when the exit code is not 127."""
    return shell_said("\n".join(lines[-60:]))


def _load_error(lines: list[str]) -> str:
    found = next((line.strip(" _=!") for line in lines if _LOAD.match(line)), "")
    error = next((m.group(1) for m in map(_PY_ERROR.match, lines) if m), "") if found else ""
    return f"{found}: {error}" if error else found


def _no_tests(lines: list[str]) -> str:
    return next((line.strip() for line in reversed(lines) if _NONE.match(line) or _NONE_IN_LINE.search(line)), "")


def _lines(output: str) -> list[str]:
    text = _ANSI.sub("", output[-TAIL_CHARS:])
    return [line[:LINE_CHARS].rstrip() for line in text.splitlines()]


def _clean(text: str | None) -> str:
    """Output quoted in a reason: no backticks (the reason wraps names in them), whitespace runs made one space."""
    return " ".join((text or "").replace("`", "'").split())


def _cut(text: str, limit: int = QUOTE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
