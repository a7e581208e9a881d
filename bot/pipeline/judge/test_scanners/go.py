"""The tests `go test` runs from a `_test.go` file: each `func TestX(` at the start of a line (gofmt puts every
top-level function there, so a line pattern finds them all and nothing nested), its body the function's `{…}`, and
its subtests (`go_subtests`). The body asserts when it calls `x.Error*`/`x.Fatal*`/`x.Fail*(` on any receiver
(`t`, `tt`, `b`), testify's `assert.`/`require.`, or `panic(`: what makes a Go test fail.
"""

from __future__ import annotations

import re

from bot.pipeline.judge import code_blocks
from bot.pipeline.judge.pyscan import TestMap
from bot.pipeline.judge.test_scanners.common import body_group, peek, scan_blocks, scan_lines
from bot.pipeline.judge.test_scanners.go_subtests import go_subtests

_TEST_FUNC = re.compile(r"^func\s+(Test\w{0,200})\s*\(")

_FAILS = {"Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow"}


def _go_asserts(tk: list[str], i: int) -> bool:
    word, before, after = tk[i], peek(tk, i - 1), peek(tk, i + 1)
    if word in _FAILS:
        return before == "." and after == "("
    return (word in ("assert", "require") and after == "." and before != ".") or (word == "panic" and after == "(")


def go_tests(text: str) -> TestMap | None:
    """`func TestX(` at the start of a line, and its subtests (`go_subtests`)."""
    found = [(m.group(1), o + m.start(1), "") for o, line in scan_lines(text) if (m := _TEST_FUNC.match(line))]
    code = code_blocks.parse(text, "go", _go_asserts)
    if code is None:
        return None
    tests = scan_blocks(code, found)
    bodies = []
    for name, offset, _ in found:
        i = code.token_at(offset)
        group = None if i is None else body_group(code, i)
        if group is not None:
            bodies.append((group.start, group.end, name))
    for name, body in go_subtests(text, code, bodies).items():
        tests.setdefault(name, body)
    return tests
