"""What the per-language test scanners share: the lines worth scanning, token look-ups, and each test's body.

A scanner finds a test's name with an anchored, bounded pattern on one line (`scan_lines`, lines past `MAX_LINE`
skipped: minified code holds no test the App can name), then reads the file's tokens from `code_blocks` for the
rest: the body is the first `{…}` within `HEADER_TOKENS` after the name (`scan_blocks`), fingerprinted by its tokens,
so layout and comments do not count and any changed token does; a body is trivial when it holds no statement. A
case or a declaration the App cannot name otherwise is named by its source (`snippet`, cut at `SNIPPET` characters
with its digest's first characters, so two long ones that begin alike still differ).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator

from bot.pipeline.judge.code_blocks import Code, Group
from bot.pipeline.judge.pyscan import TestBody, TestMap

MAX_LINE = 4096  # a longer line is not scanned for names (minified code holds no test the App can name)
HEADER_TOKENS = 64  # how far after a test's name its body may begin (`-> Result<(), Box<dyn Error>> {`)

WORD = re.compile(r"[^\W\d]\w{0,200}")
SNIPPET = 60  # characters of source that name a case or a declaration the scanners cannot name otherwise


def scan_lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line short enough to scan, with the offset where it begins."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if len(line) <= MAX_LINE:
            yield offset, line
        offset += len(line)


def peek(tokens: list[str], i: int) -> str:
    """Token `i`, or "" past either end."""
    return tokens[i] if 0 <= i < len(tokens) else ""


def nesting(code: Code) -> tuple[list[int], dict[int, int]]:
    """Each token's innermost enclosing group (its opener's index; -1 at top level), and each closer's opener."""
    parents = [-1] * len(code.tokens)
    openers: dict[int, int] = {}
    stack: list[Group] = []
    for i in range(len(code.tokens)):
        while stack and stack[-1].end < i:
            stack.pop()
        parents[i] = stack[-1].start if stack else -1
        if i in code.groups:
            group = code.groups[i]
            stack.append(group)
            openers.setdefault(group.end, i)
    return parents, openers


def snippet(text: str, code: Code, start: int, end: int, digest: str) -> str:
    """The source of tokens `start`..`end` (whose fingerprint is `digest`), its layout collapsed, shortened past
    `SNIPPET` characters with the digest's first characters, so two long ones that begin alike still differ."""
    stop = code.offsets[end] + len(code.tokens[end]) if end < len(code.tokens) else len(text)
    source = text[code.offsets[start] : min(stop, code.offsets[start] + 4 * SNIPPET)]
    shown = " ".join(source.split())
    if len(shown) <= SNIPPET and stop - code.offsets[start] <= 4 * SNIPPET:
        return shown
    return shown[: SNIPPET - 12] + "… " + digest[:8]


def unquote(literal: str) -> str:
    """A string literal's text without its quotes (escapes left as written)."""
    return literal[1:-1] if len(literal) >= 2 and literal[-1] == literal[0] else literal[1:]


def _block_body(code: Code, offset: int, expects: bool) -> TestBody | None:
    """The function body after the name at `offset`: the first `{…}` after the parameters' `(…)` (none before a
    `;`); None when the name is not code (it is inside a string or a comment)."""
    i = code.token_at(offset)
    if i is None:
        return None
    group = body_group(code, i)
    if group is None:  # no body: a declaration
        return _body(hashlib.sha256(b"").hexdigest(), True, expects, expects)
    return _body(group.digest, group.empty, group.asserts or expects, expects)


def body_group(code: Code, i: int) -> Group | None:
    """The `{…}` group of the function whose name is token `i`; None: a declaration."""
    stop = i + HEADER_TOKENS
    while i < min(stop, len(code.tokens)) and code.tokens[i] != "(":
        i += 1
    if i < len(code.tokens) and code.tokens[i] == "(":
        i = code.groups[i].end + 1
    while i < min(stop, len(code.tokens)) and code.tokens[i] not in ("{", ";"):
        i = code.groups[i].end + 1 if i in code.groups else i + 1
    return code.groups.get(i) if i < len(code.tokens) and code.tokens[i] == "{" else None


def _body(digest: str, trivial: bool, asserts: bool, expects: bool) -> TestBody:
    """A body; an expected exception or panic is part of what the test checks, so of its fingerprint too."""
    return TestBody(digest + (":expects" if expects else ""), trivial, asserts)


def scan_blocks(code: Code, found: list[tuple[str, int, str]], expects: re.Pattern[str] | None = None) -> TestMap:
    """The bodies of the tests found (name, the offset where it begins, the attribute lines before it); a header
    that matches `expects` marks a test that expects an exception or a panic."""
    tests: TestMap = {}
    for name, offset, header in found:
        body = _block_body(code, offset, expects is not None and expects.search(header) is not None)
        if body is not None:
            tests[name] = body
    return tests


def after_attribute(
    text: str,
    attribute: re.Pattern[str],
    name: Callable[[str], re.Match[str] | None],
    stop: re.Pattern[str] | None = None,
) -> list[tuple[str, int, str]]:
    """The functions that follow an attribute line (other attributes and blank lines may come between), each with
    the offset where its name begins and the text from its first attribute up to its name; a line that matches
    `stop` first ends the wait."""
    found, header, pending = [], "", False
    for offset, line in scan_lines(text):
        start = 0
        if marked := attribute.match(line):
            pending, header, start = True, line[: marked.end()], marked.end()  # `@Test void x()` on one line
        if not pending:
            continue
        if (m := name(line[start:])) is not None:
            found.append((m.group(1), offset + start + m.start(1), header + line[start : start + m.start()]))
            pending = False
        elif stop is not None and stop.search(line, start):
            pending = False
        elif not marked:
            header += line
        else:
            header = line
    return found


def elements(code: Code, group: Group) -> list[tuple[int, int]]:
    """The token ranges of a bracket group's comma-separated elements, at its own level."""
    found, i, first = [], group.start + 1, group.start + 1
    while i < group.end:
        if code.tokens[i] == ",":
            if i > first:
                found.append((first, i - 1))
            first = i + 1
        i = code.groups[i].end + 1 if i in code.groups else i + 1
    if group.end > first:
        found.append((first, group.end - 1))
    return found


def range_digest(code: Code, start: int, end: int) -> str:
    """The fingerprint of tokens `start`..`end`, each nested group by its own digest (no token hashed twice)."""
    parts, i = [], start
    while i <= end:
        group = code.groups.get(i)
        parts.append(code.tokens[i] + (group.digest if group is not None else ""))
        i = group.end + 1 if group is not None else i + 1
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
