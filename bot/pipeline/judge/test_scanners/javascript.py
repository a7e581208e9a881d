"""The tests JavaScript and TypeScript runners find (Jest, Vitest, Mocha, node:test, tap, or a project's own
driver: they share the call shape): `test("…", …)` / `it("…", …)` calls with a literal name, found by a line
pattern whatever the framework, each with its call's `(…)` after the name as its body (trivial: no callback or an
empty one), and `it.each`/`test.each`/`describe.each` rows (an array literal's entries, a template table's lines) as
`title[row]` (`js_each_cases`); a name computed with `${…}` or a `.each` over a variable is kept, by its source, as
a declaration of unknown shape. A body asserts when it holds any `assert…` name, `expect(`, `.should`, `throw`, or
a call on the test's `t` (`t.equal(…)`) other than its bookkeeping (`t.test`, `t.end`, `t.plan`, …).
"""

from __future__ import annotations

import hashlib
import re

from bot.pipeline.judge import code_blocks
from bot.pipeline.judge.code_blocks import Code
from bot.pipeline.judge.pyscan import CASE, UNKNOWN, TestBody, TestMap
from bot.pipeline.judge.test_scanners.common import elements, peek, range_digest, scan_lines, snippet, unquote

_TEST_CALL = re.compile(
    r"""(?:^|[^\w.$])(?:test|it)(?:\.(?:only|skip|todo|concurrent))?\s*(\()\s*"""
    r"""(?:'([^'\\\n]{1,300})'|"([^"\\\n]{1,300})"|`([^`\\\n$]{1,300})`)"""
)
# A test whose name is computed (a template with `${…}`): a declaration the App cannot name.
_COMPUTED = re.compile(r"""(?:^|[^\w.$])(?:test|it)(?:\.(?:only|skip|concurrent))?\s*(\()\s*`[^`\n]{0,300}?\$\{""")
_EACH = re.compile(r"""(?:^|[^\w.$])(?:describe|test|it)(?:\.(?:only|skip|concurrent))?\.each\s*(\(|`)""")
# A JavaScript test call's arguments after the name, in outline (see `_js_outline`), that hold no test: none, or
# one empty function, perhaps after an options object and before a timeout.
_EMPTY = re.compile(r"(?:\{…?\} )?(?:(?:async )?(?:function (?:w )?\(…?\)|\(…?\) =>|w =>) \{\} ?(?:w)?)?")
_BOOKKEEPING = {"test", "end", "plan", "skip", "todo", "diagnostic", "comment", "teardown", "timeout", "mock"}


def _js_asserts(tk: list[str], i: int) -> bool:
    word, before, after = tk[i], peek(tk, i - 1), peek(tk, i + 1)
    if word.startswith("assert") or word == "throw" or (word == "should" and before == "."):
        return True
    if word == "expect":
        return after == "("
    return word == "t" and before != "." and after == "." and peek(tk, i + 2) not in _BOOKKEEPING


def js_tests(text: str) -> TestMap | None:
    """The literal names of `test(…)` and `it(…)` calls (`.only`, `.skip` too), each with its call's arguments as
    its body; template strings with `${` are not literal and are left out."""
    code = code_blocks.parse(text, "javascript", _js_asserts)
    if code is None:
        return None
    tests: TestMap = {}
    templates: dict[int, int] | None = None  # each template literal's first token -> its last
    covered = -1  # the last token of the `.each` template tables read so far
    for offset, line in scan_lines(text):
        for m in _TEST_CALL.finditer(line):
            name = next(g for g in m.groups()[1:] if g is not None)
            at = code.token_at(offset + m.start(1))
            group = None if at is None else code.groups.get(at)
            if group is None:  # the `(` is inside a string or a comment
                continue
            outline = _js_outline(code, group.start + 2, group.end)
            tests[name] = TestBody(group.digest, _EMPTY.fullmatch(outline) is not None, group.asserts)
        for m in _COMPUTED.finditer(line):
            at = code.token_at(offset + m.start(1))
            if at is not None and (group := code.groups.get(at)) is not None:
                name = snippet(text, code, at - 1, group.end, group.digest)
                tests[name] = TestBody(group.digest, False, False, UNKNOWN)
        for m in _EACH.finditer(line):
            at = code.token_at(offset + m.start(1))
            if at is None or at <= covered:  # a table inside another's template is read as part of it
                continue
            templates = _template_ends(code.tokens) if templates is None else templates
            tests.update(js_each_cases(text, code, at, templates))
            covered = templates.get(at, covered) if code.tokens[at].startswith("`") else covered
    return tests


def js_each_cases(text: str, code: Code, at: int, templates: dict[int, int]) -> TestMap:
    """The rows of a `test.each` / `it.each` / `describe.each` table whose `(` or template starts at token `at`,
    each a case of its title (`title[row]`, named by the row's source): the entries of an array literal, or the
    lines after a template table's header; a table of another shape (a variable) is one declaration of unknown
    shape."""
    tokens, rows = code.tokens, []
    if tokens[at] == "(" and at in code.groups:
        call = code.groups[at]
        end = call.end
        if peek(tokens, at + 1) == "[" and (table := code.groups.get(at + 1)) is not None:
            spans = [(a, b, range_digest(code, a, b)) for a, b in elements(code, table)]
            rows = [(snippet(text, code, a, b, d), d) for a, b, d in spans]
    elif tokens[at].startswith("`"):
        if at not in templates:
            return {}  # a template that never ends holds no table
        end = templates[at]
        stop = code.offsets[end] + len(tokens[end]) if end < len(tokens) else len(text)
        lines = [" ".join(line.split()) for line in text[code.offsets[at] + 1 : stop - 1].splitlines()]
        lines = [line for line in lines if line]
        rows = [(line, hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()) for line in lines[1:]]
    else:
        return {}
    title_at = end + 1
    title = peek(tokens, title_at + 1) if peek(tokens, title_at) == "(" else ""
    parent = unquote(title) if title[:1] in ("'", '"', "`") else "each"
    if not rows and tokens[at] == "(":
        call = code.groups[at]
        name = f"{parent}[{snippet(text, code, at + 1, call.end - 1, call.digest)}]"
        return {name: TestBody(call.digest, False, False, UNKNOWN)}
    return {f"{parent}[{row}]": TestBody(digest, False, False, CASE, parent) for row, digest in rows}


def _template_ends(tokens: list[str]) -> dict[int, int]:
    """Each template literal's first token and its last (the one ending in a backquote), paired in one pass: a
    template's `${…}` may hold another."""
    ends, open_at = {}, []
    for i, token in enumerate(tokens):
        if token.startswith("`"):
            if token.endswith("${"):
                open_at.append(i)
            elif len(token) > 1 and token.endswith("`"):
                ends[i] = i
        elif token.startswith("}") and token.endswith("`") and open_at:
            ends[open_at.pop()] = i
    return ends


def _js_outline(code: Code, start: int, end: int) -> str:
    """The call's arguments after the name, at their own level: each word `w` (keywords `async`/`function` as
    they are), each nested group as its brackets (with `…` inside when not empty), commas left out."""
    parts, i = [], start
    while i < end:
        token = code.tokens[i]
        if i in code.groups:
            group = code.groups[i]
            parts.append(token + ("" if group.empty else "…") + code_blocks.CLOSER[token])
            i = group.end + 1
            continue
        if token != ",":
            word = token[0].isalnum() or token[0] in "_$"
            parts.append("w" if word and token not in ("async", "function") else token)
        i += 1
    return " ".join(parts)
