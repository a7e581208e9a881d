"""Existing tests a change drops: test functions and methods of the base commit's test files gone or emptied after it.

Decided on the worker from its own trees: the base file from the checkout's git objects at the base commit, the
changed one from the tree the worker's git built from the host's diff. Python files are read by `pyscan` (`ast` in
a limited child process; never imported or run), Go, Rust, Java and JavaScript files by their scanners
(`test_scanners`); a test file in another language is listed as not checked, and a file that does not parse on
either side, or is too large or too costly to read, as one the App cannot tell about.

A base test counts as dropped when it is gone from its file, or emptied there (its body now trivial where it was
not: only `pass`/`...`/a docstring in Python, no statement in the other languages; or no assertion left where it
had one), unless a test of the same name with an equivalent body is defined in one of the change's test files in
the same language. Equivalent: the same `ast.dump` of the body without its docstring in Python, the same tokens of
the body in the others (so layout and comments do not matter, any changed statement does).

Cases count too, however declared (pytest parametrize entries, Go table rows and `t.Run` subtests, JavaScript
`.each` rows, Rust tests written as macro invocations: see the scanners): a case with a name of its own gone is a
dropped test; one named by its own source gone is dropped when its test has fewer such cases after the change,
and "cannot tell" when it has as many (edited in place). A test declaration the scanners cannot name (a Rust test
macro of another shape, a test generator `macro_rules!`, a JavaScript test whose name is computed, parametrize
values that are not a literal list) gone or changed is "cannot tell" (`DroppedTests.uncertain`): such an attempt
ranks below one that drops nothing and above one that certainly drops a test (`ranking.py`).
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Sequence
from pathlib import Path

from bot.pipeline.candidates import DroppedTests
from bot.pipeline.git import gitops
from bot.pipeline.judge import pyscan, reproduce, test_scanners, trees
from bot.pipeline.judge.pyscan import TestBody, TestMap

MAX_BYTES = 2 << 20  # a larger test file is not parsed: the App cannot tell
_REGULAR = {"100644", "100755"}


def dropped_tests(
    checkout: Path,
    after: Path,
    paths: Sequence[str],
    test_paths: Sequence[str],
    cancel: threading.Event | None = None,
    *,
    base: str = "HEAD",
) -> DroppedTests:
    """The tests of the base commit's (`base` in the checkout's objects) test files among `paths` gone or emptied
    in `after`; once `cancel` is set, the files not yet read are listed as ones the App cannot tell about."""
    found = DroppedTests()
    tests = [p for p in paths if reproduce.matches(p, test_paths) or test_scanners.holds_tests(p)]
    existing = _at_base(checkout, tests, base)
    now = {p: _tests_after(after, p, cancel) for p in tests if test_scanners.language_of(p)}
    everywhere = _bodies_by_name(now)  # a test moved to another of the change's test files, unchanged, is kept
    for path, (blob, size) in sorted(existing.items()):
        language = test_scanners.language_of(path)
        if language is None:
            if _looks_like_tests(path):
                found.unchecked.append(path)
            continue
        stopped = cancel is not None and cancel.is_set()
        before = None if stopped or size > MAX_BYTES else find_tests(path, _blob(checkout, blob))
        later = now.get(path)
        if before is None or later is None:
            found.unparsed.append(path)
            continue
        gone, unsure = judge_file(before, later, everywhere.get(language, {}))
        found.tests += [f"{path}::{name}" for name in sorted(gone)]
        found.uncertain += [f"{path}::{name}" for name in sorted(unsure)]
    return found


def find_tests(path: str, source: bytes) -> TestMap | None:
    """The tests one file defines, by its language's scanner; None: cannot tell."""
    if path.endswith(".py"):
        return pyscan.python_tests(source, MAX_BYTES)
    return test_scanners.scan(path, source)


def lost(before: TestMap, after: TestMap, everywhere: dict[str, set[str]]) -> list[str]:
    """The base tests gone from `after` or emptied there, with no equivalent body of the same name anywhere."""
    return [
        name
        for name, body in before.items()
        if (name not in after or emptied(body, after[name])) and body.fingerprint not in everywhere.get(name, set())
    ]


def judge_file(before: TestMap, after: TestMap, everywhere: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """What one test file lost: (the tests and cases it certainly dropped, the declarations gone that the App
    cannot tell about). A case whose test went too is not listed again. A case named by its own source (a
    parametrize entry, a table row) is dropped when its test now has fewer such cases, and "cannot tell" when it
    has as many (an entry edited in place: perhaps a fix's new expectation, perhaps a weakened one); a declaration
    of unknown shape (a macro invocation whose tests cannot be named) gone is always "cannot tell"."""
    gone = set(lost(before, after, everywhere))
    certain, unsure = [], []
    for name in gone:
        body = before[name]
        if body.parent and body.parent in gone:
            continue
        edited = body.kind == pyscan.CASE and _cases(after, body.parent) >= _cases(before, body.parent)
        if body.kind == pyscan.UNKNOWN or edited:
            unsure.append(name)
        else:
            certain.append(name)
    return certain, unsure


def _cases(tests: TestMap, parent: str) -> int:
    return sum(1 for body in tests.values() if body.kind == pyscan.CASE and body.parent == parent)


def emptied(before: TestBody, after: TestBody) -> bool:
    """A body reduced to nothing (`pass`, `...`, a docstring; an empty block), or left without the assertion it
    had."""
    return (after.trivial and not before.trivial) or (before.asserts and not after.asserts)


def _bodies_by_name(maps: dict[str, TestMap | None]) -> dict[str, dict[str, set[str]]]:
    """Per language, every test name in the change's test files after it, with the fingerprints of its bodies."""
    bodies: dict[str, dict[str, set[str]]] = {}
    for path, tests in maps.items():
        same = bodies.setdefault(test_scanners.language_of(path) or "", {})
        for name, body in (tests or {}).items():
            same.setdefault(name, set()).add(body.fingerprint)
    return bodies


def defined_tests(source: bytes) -> set[str] | None:
    """Test functions (`test_x`) and methods (`Class::test_y`) defined in a Python file; None when it is not valid
    Python (or too large or too costly to read): then nobody can tell which tests it holds."""
    tests = pyscan.python_tests(source, MAX_BYTES)
    return None if tests is None else {name for name, body in tests.items() if not body.parent}


def _at_base(checkout: Path, paths: list[str], base: str = "HEAD") -> dict[str, tuple[str, int]]:
    """The regular files among `paths` in the base commit, each with its blob id and size, from git."""
    if not paths:
        return {}
    listing = gitops.git_bytes(
        ["ls-tree", "-l", "-z", "--full-tree", "--end-of-options", base, "--", *paths],
        cwd=checkout,
        env={"GIT_LITERAL_PATHSPECS": "1"},
        what="git ls-tree",
    )
    found = {}
    for entry in filter(None, listing.split(b"\0")):
        meta, _, name = entry.partition(b"\t")
        mode, kind, blob, size = meta.decode().split()
        if kind == "blob" and mode in _REGULAR:
            found[name.decode("utf-8", "surrogateescape")] = (blob, int(size))
    return found


def _blob(checkout: Path, blob: str) -> bytes:
    return gitops.git_bytes(["cat-file", "blob", "--end-of-options", blob], cwd=checkout, what="git cat-file")


def _tests_after(tree: Path, path: str, cancel: threading.Event | None) -> TestMap | None:
    """The tests of `path` in `tree`: none left when the change deleted it (or made it a link); None: cannot
    tell."""
    if not trees.present(tree, path):
        return {}
    if (cancel is not None and cancel.is_set()) or (tree / path).stat().st_size > MAX_BYTES:
        return None
    return find_tests(path, (tree / path).read_bytes())


def _looks_like_tests(path: str) -> bool:
    """A test source in another language (`foo_test.go`, `x.spec.ts`), not a fixture or data file."""
    name = posixpath.basename(path).lower()
    return "test" in name or "spec" in name
