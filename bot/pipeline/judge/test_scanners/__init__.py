"""The tests a source file in another language than Python defines, and each one's body, found by cheap scanners
(never a parser, never run), one module per runner: `go` (`go test`, with `go_subtests`), `rust` (`cargo test`,
with `rust_macros`), `java` (JUnit) and `javascript` (`test()`/`it()` runners), over what `common` shares. Each
finds names line by line with anchored, bounded patterns and reads bodies as bracket groups from `code_blocks`, so
time is linear in the file's size; files over `MAX_BYTES` are not read (the App cannot tell). The files are
untrusted repository content: only read. Here: which scanner a path gets (`language_of`, `scan`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from bot.pipeline.judge.pyscan import TestMap
from bot.pipeline.judge.test_scanners.go import go_tests
from bot.pipeline.judge.test_scanners.java import java_tests
from bot.pipeline.judge.test_scanners.javascript import js_tests
from bot.pipeline.judge.test_scanners.rust import rust_test_file, rust_tests

MAX_BYTES = 2 << 20

_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")

Scanner = Callable[[str], TestMap | None]

_SCANNERS: dict[str, Scanner] = {"go": go_tests, "rust": rust_tests, "java": java_tests, "javascript": js_tests}


def language_of(path: str) -> str | None:
    """The language of a file the App can read tests from (`python` too); None: not one of them."""
    name = posixpath.basename(path)
    if name.endswith(".py"):
        return "python"
    if name.endswith("_test.go"):
        return "go"
    if name.endswith(".rs"):
        return "rust"
    if name.endswith(".java"):
        return "java"
    return "javascript" if name.endswith(_JS_SUFFIXES) else None


def holds_tests(path: str) -> bool:
    """Whether a source file may hold tests wherever it is: Rust's unit tests live beside the code in `src/`."""
    return path.endswith(".rs")


def scan(path: str, source: bytes) -> TestMap | None:
    """The tests `source` (the file at `path`, not Python) defines; None when it is too large (in bytes or
    tokens) or not one of the languages."""
    language = language_of(path) or ""
    scanner = _SCANNERS.get(language)
    if scanner is None or len(source) > MAX_BYTES:
        return None
    text = source.decode("utf-8", errors="replace")
    return rust_tests(text, rust_test_file(path)) if language == "rust" else scanner(text)
