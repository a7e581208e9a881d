"""Existing tests a change drops: test functions and methods of the base commit's test files gone after it.

Decided on the worker from its own trees: the base file from the checkout's git objects at the base commit, the
changed one from the tree the worker's git built from the host's diff. Both are parsed with Python's `ast` (read,
never imported or run); nothing the sandbox says is used. Python files only: a test file in another language is
listed as not checked, and a Python file that does not parse on either side as one the App cannot tell about.
Go, Rust, Java and JavaScript files go to their line scanners (`test_scanners.py`) through `_other_language`.
A test that moved to another of the change's test files (the same `Class::test_x` defined there) is not dropped.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterator, Sequence
from pathlib import Path

from bot.pipeline import gitops, reproduce, test_scanners, trees
from bot.pipeline.candidates import DroppedTests

MAX_BYTES = 2 << 20  # a larger test file is not parsed: the App cannot tell
_REGULAR = {"100644", "100755"}


def dropped_tests(checkout: Path, after: Path, paths: Sequence[str], test_paths: Sequence[str]) -> DroppedTests:
    """The tests present in the base commit's test files among `paths` and gone from them in `after`."""
    found = DroppedTests()
    tests = [p for p in paths if reproduce.matches(p, test_paths) or test_scanners.holds_tests(p)]
    existing = _at_base(checkout, tests)
    moved = _defined_anywhere(after, tests)  # a test moved to another of the change's test files is kept
    for path, (blob, size) in sorted(existing.items()):
        if not path.endswith(".py"):
            _other_language(found, checkout, after, path, (blob, size), tests)
            continue
        before = None if size > MAX_BYTES else defined_tests(_blob(checkout, blob))
        now = _names_after(after, path)
        if before is None or now is None:
            found.unparsed.append(path)
            continue
        found.tests += [f"{path}::{name}" for name in sorted(before - now - moved)]
    return found


def _other_language(
    found: DroppedTests, checkout: Path, after: Path, path: str, blob: tuple[str, int], tests: list[str]
) -> None:
    """The dispatch to another language's scanner; a test file in a language with none is listed as not checked."""
    if test_scanners.scanner_for(path) is None:
        if _looks_like_tests(path):
            found.unchecked.append(path)
        return
    base = _blob(checkout, blob[0]) if blob[1] <= MAX_BYTES else None
    lost = test_scanners.dropped(path, base, lambda p: _read_after(after, p), tests)
    if lost is None:
        found.unparsed.append(path)
    else:
        found.tests += [f"{path}::{name}" for name in lost]


def _read_after(tree: Path, path: str) -> bytes | None:
    """The file's first MAX_BYTES + 1 bytes in `tree` (more means too large to read); None when the change deleted
    it (or made it a link)."""
    if not trees.present(tree, path):
        return None
    with (tree / path).open("rb") as file:
        return file.read(MAX_BYTES + 1)


def _defined_anywhere(after: Path, paths: list[str]) -> set[str]:
    """The test names (`Class::test_x`, without the file) of every Python test file among `paths` in `after`."""
    names: set[str] = set()
    for path in paths:
        if path.endswith(".py"):
            names |= _names_after(after, path) or set()
    return names


def defined_tests(source: bytes) -> set[str] | None:
    """Test functions (`test_x`) and methods (`Class::test_y`) defined in a Python file; None when it is not valid
    Python (or too large to read): then nobody can tell which tests it holds."""
    if len(source) > MAX_BYTES:
        return None
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        return None
    return set(_names(module.body, ""))


def _names(body: list[ast.stmt], prefix: str) -> Iterator[str]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            yield prefix + node.name
        elif isinstance(node, ast.ClassDef):
            yield from _names(node.body, f"{prefix}{node.name}::")


def _at_base(checkout: Path, paths: list[str]) -> dict[str, tuple[str, int]]:
    """The regular files among `paths` in the base commit (HEAD), each with its blob id and size, from git."""
    if not paths:
        return {}
    listing = gitops.git_bytes(
        ["ls-tree", "-l", "-z", "--full-tree", "HEAD", "--", *paths],
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
    return gitops.git_bytes(["cat-file", "blob", blob], cwd=checkout, what="git cat-file")


def _names_after(tree: Path, path: str) -> set[str] | None:
    """The test names of `path` in `tree`: none left when the change deleted it (or made it a link)."""
    if not trees.present(tree, path):
        return set()
    if (tree / path).stat().st_size > MAX_BYTES:
        return None
    return defined_tests((tree / path).read_bytes())


def _looks_like_tests(path: str) -> bool:
    """A test source in another language (`foo_test.go`, `x.spec.ts`), not a fixture or data file."""
    name = posixpath.basename(path).lower()
    return "test" in name or "spec" in name
