"""The tests a source file in another language defines, found by cheap line scanners (never a parser, never run).

Go `func TestX(`, Rust `#[test]` functions, JUnit `@Test` methods, and JavaScript/TypeScript `test("…")` /
`it("…")` calls with a literal name (whatever the framework: projects often have their own driver). Each scanner
reads a file line by line with anchored, bounded patterns, so its time is linear in the file's size; files over
`MAX_BYTES` are not read (the App cannot tell). The files are untrusted repository content: only read.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator

MAX_BYTES = 2 << 20
MAX_LINE = 4096  # a longer line is not scanned (minified code holds no test the App can name)

_GO = re.compile(r"^func\s+(Test\w{0,200})\s*\(")
_RUST_ATTR = re.compile(r"^\s*#\[(?:\w{1,40}::){0,3}test\b")
_RUST_FN = re.compile(r"^\s*(?:pub(?:\([\w:]{0,40}\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w{1,200})")
_JAVA_ATTR = re.compile(r"^\s*@(?:org\.junit\.(?:jupiter\.api\.)?)?(?:Test|ParameterizedTest)\b")
_JAVA_METHOD = re.compile(r"\bvoid\s+(\w{1,200})\s*\(")
_JS = re.compile(
    r"""(?:^|[^\w.$])(?:test|it)(?:\.(?:only|skip|todo|concurrent))?\s*\(\s*"""
    r"""(?:'([^'\\\n]{1,300})'|"([^"\\\n]{1,300})"|`([^`\\\n$]{1,300})`)"""
)
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")

Scanner = Callable[[str], set[str]]


def _lines(text: str) -> Iterator[str]:
    return (line for line in text.splitlines() if len(line) <= MAX_LINE)


def go_tests(text: str) -> set[str]:
    """`func TestX(` at the start of a line."""
    return {m.group(1) for line in _lines(text) if (m := _GO.match(line))}


def _after_attribute(text: str, attribute: re.Pattern[str], name: Callable[[str], re.Match[str] | None]) -> set[str]:
    """Names of the functions that follow an attribute line (other attributes and blank lines may come between)."""
    found, pending = set(), False
    for line in _lines(text):
        if marked := attribute.match(line):
            pending, line = True, line[marked.end() :]  # `@Test void x()` on one line
        if pending and (m := name(line)):
            found.add(m.group(1))
            pending = False
    return found


def rust_tests(text: str) -> set[str]:
    """Functions marked `#[test]` (or `#[tokio::test]` and the like)."""
    return _after_attribute(text, _RUST_ATTR, _RUST_FN.match)


def java_tests(text: str) -> set[str]:
    """Methods marked JUnit `@Test` (or `@ParameterizedTest`)."""
    return _after_attribute(text, _JAVA_ATTR, _JAVA_METHOD.search)


def js_tests(text: str) -> set[str]:
    """The literal names of `test(…)` and `it(…)` calls (`.only`, `.skip` too); template strings with `${` are not
    literal and are left out."""
    found = set()
    for line in _lines(text):
        for m in _JS.finditer(line):
            found.add(next(g for g in m.groups() if g is not None))
    return found


def scanner_for(path: str) -> Scanner | None:
    """The scanner for a file in one of the languages the App knows (None: not one of them)."""
    name = posixpath.basename(path)
    if name.endswith("_test.go"):
        return go_tests
    if name.endswith(".rs"):
        return rust_tests
    if name.endswith(".java"):
        return java_tests
    if name.endswith(_JS_SUFFIXES):
        return js_tests
    return None


def holds_tests(path: str) -> bool:
    """Whether a source file may hold tests wherever it is: Rust's unit tests live beside the code in `src/`."""
    return path.endswith(".rs")


def scan(path: str, source: bytes) -> set[str] | None:
    """The tests `source` (the file at `path`) defines; None when it is too large or not one of the languages."""
    scanner = scanner_for(path)
    if scanner is None or len(source) > MAX_BYTES:
        return None
    return scanner(source.decode("utf-8", errors="replace"))


def dropped(
    path: str, base: bytes | None, read_after: Callable[[str], bytes | None], tests: list[str]
) -> list[str] | None:
    """The tests `path` defined at the base commit (`base`) and the change lost, not counting one now defined in
    another of the change's files in the same language; None when a side is too large to read."""
    before = None if base is None else scan(path, base)
    text = read_after(path)
    now = set() if text is None else scan(path, text)
    if before is None or now is None:
        return None
    moved: set[str] = set()
    for other in tests:
        if other != path and scanner_for(other) is scanner_for(path) and (data := read_after(other)) is not None:
            moved |= scan(other, data) or set()
    return sorted(before - now - moved)
