"""The tests JUnit runs: methods after a `@Test` or `@ParameterizedTest` annotation line (JUnit marks tests by
annotation only, so the first `void name(` after one is the test), and a parameterized test's cases from its
`@ValueSource`/`@CsvSource` values as `method[value]` (`java_source_cases`); a `@MethodSource` or other source held
elsewhere is one declaration of unknown shape. A body asserts when it holds any `assert…` name (the keyword,
JUnit's, AssertJ's, Hamcrest's), `fail(`, `throw` or Mockito's `verify(`; `@Test(expected = …)` counts as an
assertion and is part of the test's fingerprint.
"""

from __future__ import annotations

import re

from bot.pipeline.judge import code_blocks
from bot.pipeline.judge.code_blocks import Code
from bot.pipeline.judge.pyscan import CASE, UNKNOWN, TestBody, TestMap
from bot.pipeline.judge.test_scanners.common import (
    HEADER_TOKENS,
    after_attribute,
    elements,
    nesting,
    peek,
    range_digest,
    scan_blocks,
    snippet,
)

_ATTR = re.compile(r"^\s*@(?:org\.junit\.(?:jupiter\.api\.)?)?(?:Test|ParameterizedTest)\b")
_METHOD = re.compile(r"\bvoid\s+(\w{1,200})\s*\(")
_EXPECTED = re.compile(r"@Test\s*\(\s*expected\s*=")


def _java_asserts(tk: list[str], i: int) -> bool:
    word, after = tk[i], peek(tk, i + 1)
    return word.startswith("assert") or word == "throw" or (word in ("fail", "verify") and after == "(")


def java_tests(text: str) -> TestMap | None:
    """Methods marked JUnit `@Test` (or `@ParameterizedTest`, with its cases: `java_source_cases`)."""
    code = code_blocks.parse(text, "java", _java_asserts)
    methods = after_attribute(text, _ATTR, _METHOD.search)
    if code is None:
        return None
    tests = scan_blocks(code, methods, _EXPECTED)
    for name, body in java_source_cases(text, code, methods).items():
        tests.setdefault(name, body)
    return tests


def java_source_cases(text: str, code: Code, methods: list[tuple[str, int, str]]) -> TestMap:
    """The cases of parameterized JUnit tests: each value of a `@ValueSource(ints = {…})` or `@CsvSource({…})`
    before the method (an array's entries, or the one value), as `method[value]` named by its source; a
    `@MethodSource`, `@CsvFileSource` or `@ArgumentsSource` (cases held elsewhere) is one declaration of unknown
    shape."""
    tokens, found = code.tokens, {}
    openers = nesting(code)[1] if methods else {}
    for method, offset, _ in methods:
        i = code.token_at(offset)
        k, steps = -1 if i is None else i - 1, 0
        while k >= 0 and tokens[k] not in (";", "{", "}") and steps < HEADER_TOKENS:  # back over its annotations
            steps += 1
            opener = openers.get(k) if tokens[k] == ")" else None
            if opener is None:
                k -= 1
                continue
            kind, group = peek(tokens, opener - 1), code.groups[opener]
            if kind in ("ValueSource", "CsvSource"):
                for a, b in elements(code, group):
                    key, a = (tokens[a], a + 2) if peek(tokens, a + 1) == "=" else ("value", a)
                    if a > b or (kind == "CsvSource" and key not in ("value", "textBlock")):
                        continue
                    array = code.groups.get(a) if tokens[a] == "{" and openers.get(b) == a else None
                    for x, y in elements(code, array) if array is not None else [(a, b)]:
                        digest = range_digest(code, x, y)
                        found[f"{method}[{snippet(text, code, x, y, digest)}]"] = TestBody(
                            digest, False, False, CASE, method
                        )
            elif kind in ("MethodSource", "CsvFileSource", "ArgumentsSource"):
                name = f"{method}[@{kind}{snippet(text, code, opener, k, group.digest)}]"
                found[name] = TestBody(group.digest, False, False, UNKNOWN, method)
            k = opener - 1
    return found
