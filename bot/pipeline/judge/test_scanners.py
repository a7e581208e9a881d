"""The tests a source file in another language defines, and each one's body, found by cheap scanners (never a
parser, never run).

Names are found line by line with anchored, bounded patterns: Go `func TestX(`, Rust `#[test]` functions, JUnit
`@Test` methods, and JavaScript/TypeScript `test("…")` / `it("…")` calls with a literal name (whatever the
framework: projects often have their own driver). Each test's body is then the bracket group after its header
(`code_blocks`: the function's `{…}`; for JavaScript the call's `(…)` after the name), fingerprinted by its tokens,
so layout and comments do not count and any changed token does. A body is trivial when it holds no statement (an
empty block; in JavaScript, no callback or an empty one), and asserts when it holds an assertion-like call:

- Go: `x.Error*`/`x.Fatal*`/`x.Fail*(` (any receiver: `t`, `tt`, `b`), testify's `assert.`/`require.`, `panic(`;
- Rust: the `assert*!`/`debug_assert*!`/`panic!`/`unreachable!` macros, `.unwrap()`/`.expect(` and their `_err`
  forms (a test fails on them), or a `#[should_panic]` attribute (`?` alone is not: it only passes errors on);
- Java: any `assert…` name (the keyword, JUnit's, AssertJ's, Hamcrest's), `fail(`, `throw`, Mockito's `verify(`,
  or `@Test(expected = …)`;
- JavaScript: any `assert…` name, `expect(`, `.should`, `throw`, or a call on the test's `t` (`t.equal(…)`) other
  than its bookkeeping (`t.test`, `t.end`, `t.plan`, …).

Files over `MAX_BYTES` are not read (the App cannot tell); time is linear in the file's size. The files are
untrusted repository content: only read.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Callable, Iterator

from bot.pipeline.judge import code_blocks
from bot.pipeline.judge.code_blocks import Code
from bot.pipeline.judge.pyscan import TestBody, TestMap

MAX_BYTES = 2 << 20
MAX_LINE = 4096  # a longer line is not scanned for names (minified code holds no test the App can name)
HEADER_TOKENS = 64  # how far after a test's name its body may begin (`-> Result<(), Box<dyn Error>> {`)

_GO = re.compile(r"^func\s+(Test\w{0,200})\s*\(")
_RUST_ATTR = re.compile(r"^\s*#\[(?:\w{1,40}::){0,3}test\b")
# the rest of an attribute (`#[test] fn x`, `#[tokio::test(flavor = "…")] async fn y`) may come first
_RUST_FN = re.compile(
    r"^(?:[^\n]{0,300}?\]\s*)?\s*(?:pub(?:\([\w:]{0,40}\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w{1,200})"
)
_JAVA_ATTR = re.compile(r"^\s*@(?:org\.junit\.(?:jupiter\.api\.)?)?(?:Test|ParameterizedTest)\b")
_JAVA_METHOD = re.compile(r"\bvoid\s+(\w{1,200})\s*\(")
_EXPECTS = {"rust": re.compile(r"#\[\s*should_panic\b"), "java": re.compile(r"@Test\s*\(\s*expected\s*=")}
_JS = re.compile(
    r"""(?:^|[^\w.$])(?:test|it)(?:\.(?:only|skip|todo|concurrent))?\s*(\()\s*"""
    r"""(?:'([^'\\\n]{1,300})'|"([^"\\\n]{1,300})"|`([^`\\\n$]{1,300})`)"""
)
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
# A JavaScript test call's arguments after the name, in outline (see `_js_outline`), that hold no test: none, or
# one empty function, perhaps after an options object and before a timeout.
_JS_EMPTY = re.compile(r"(?:\{…?\} )?(?:(?:async )?(?:function (?:w )?\(…?\)|\(…?\) =>|w =>) \{\} ?(?:w)?)?")

_GO_FAILS = {"Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow"}
_RUST_MACROS = re.compile(r"(?:debug_)?assert\w*|panic|unreachable")
_RUST_FAILS = {"unwrap", "expect", "unwrap_err", "expect_err"}
_JS_BOOKKEEPING = {"test", "end", "plan", "skip", "todo", "diagnostic", "comment", "teardown", "timeout", "mock"}

Scanner = Callable[[str], TestMap | None]


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line short enough to scan, with the offset where it begins."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if len(line) <= MAX_LINE:
            yield offset, line
        offset += len(line)


def _token(tokens: list[str], i: int) -> str:
    return tokens[i] if 0 <= i < len(tokens) else ""


def _go_asserts(tk: list[str], i: int) -> bool:
    word, before, after = tk[i], _token(tk, i - 1), _token(tk, i + 1)
    if word in _GO_FAILS:
        return before == "." and after == "("
    return (word in ("assert", "require") and after == "." and before != ".") or (word == "panic" and after == "(")


def _rust_asserts(tk: list[str], i: int) -> bool:
    word, after = tk[i], _token(tk, i + 1)
    if after == "!":
        return _RUST_MACROS.fullmatch(word) is not None
    return word in _RUST_FAILS and _token(tk, i - 1) == "." and after == "("


def _java_asserts(tk: list[str], i: int) -> bool:
    word, after = tk[i], _token(tk, i + 1)
    return word.startswith("assert") or word == "throw" or (word in ("fail", "verify") and after == "(")


def _js_asserts(tk: list[str], i: int) -> bool:
    word, before, after = tk[i], _token(tk, i - 1), _token(tk, i + 1)
    if word.startswith("assert") or word == "throw" or (word == "should" and before == "."):
        return True
    if word == "expect":
        return after == "("
    return word == "t" and before != "." and after == "." and _token(tk, i + 2) not in _JS_BOOKKEEPING


_ASSERTS = {"go": _go_asserts, "rust": _rust_asserts, "java": _java_asserts, "javascript": _js_asserts}


def _block_body(code: Code, offset: int, expects: bool) -> TestBody | None:
    """The function body after the name at `offset`: the first `{…}` after the parameters' `(…)` (none before a
    `;`); None when the name is not code (it is inside a string or a comment)."""
    i = code.token_at(offset)
    if i is None:
        return None
    stop = i + HEADER_TOKENS
    while i < min(stop, len(code.tokens)) and code.tokens[i] != "(":
        i += 1
    if i < len(code.tokens) and code.tokens[i] == "(":
        i = code.groups[i].end + 1
    while i < min(stop, len(code.tokens)) and code.tokens[i] not in ("{", ";"):
        i = code.groups[i].end + 1 if i in code.groups else i + 1
    group = code.groups.get(i) if i < len(code.tokens) and code.tokens[i] == "{" else None
    if group is None:  # no body: a declaration
        return _body(hashlib.sha256(b"").hexdigest(), True, expects, expects)
    return _body(group.digest, group.empty, group.asserts or expects, expects)


def _body(digest: str, trivial: bool, asserts: bool, expects: bool) -> TestBody:
    """A body; an expected exception or panic is part of what the test checks, so of its fingerprint too."""
    return TestBody(digest + (":expects" if expects else ""), trivial, asserts)


def _scan_blocks(text: str, language: str, found: list[tuple[str, int, str]]) -> TestMap | None:
    """The bodies of the tests found (name, the offset where it begins, the attribute lines before it)."""
    code = code_blocks.parse(text, language, _ASSERTS[language])
    if code is None:
        return None
    expects = _EXPECTS.get(language)
    tests: TestMap = {}
    for name, offset, header in found:
        body = _block_body(code, offset, expects is not None and expects.search(header) is not None)
        if body is not None:
            tests[name] = body
    return tests


def go_tests(text: str) -> TestMap | None:
    """`func TestX(` at the start of a line."""
    found = [(m.group(1), o + m.start(1), "") for o, line in _lines(text) if (m := _GO.match(line))]
    return _scan_blocks(text, "go", found)


def _after_attribute(
    text: str, attribute: re.Pattern[str], name: Callable[[str], re.Match[str] | None]
) -> list[tuple[str, int, str]]:
    """The functions that follow an attribute line (other attributes and blank lines may come between), each with
    the offset where its name begins and the text from its first attribute up to its name."""
    found, header, pending = [], "", False
    for offset, line in _lines(text):
        start = 0
        if marked := attribute.match(line):
            pending, header, start = True, line[: marked.end()], marked.end()  # `@Test void x()` on one line
        if not pending:
            continue
        if (m := name(line[start:])) is not None:
            found.append((m.group(1), offset + start + m.start(1), header + line[start : start + m.start()]))
            pending = False
        elif not marked:
            header += line
        else:
            header = line
    return found


def rust_tests(text: str) -> TestMap | None:
    """Functions marked `#[test]` (or `#[tokio::test]` and the like)."""
    return _scan_blocks(text, "rust", _after_attribute(text, _RUST_ATTR, _RUST_FN.match))


def java_tests(text: str) -> TestMap | None:
    """Methods marked JUnit `@Test` (or `@ParameterizedTest`)."""
    return _scan_blocks(text, "java", _after_attribute(text, _JAVA_ATTR, _JAVA_METHOD.search))


def js_tests(text: str) -> TestMap | None:
    """The literal names of `test(…)` and `it(…)` calls (`.only`, `.skip` too), each with its call's arguments as
    its body; template strings with `${` are not literal and are left out."""
    code = code_blocks.parse(text, "javascript", _js_asserts)
    if code is None:
        return None
    tests: TestMap = {}
    for offset, line in _lines(text):
        for m in _JS.finditer(line):
            name = next(g for g in m.groups()[1:] if g is not None)
            at = code.token_at(offset + m.start(1))
            group = None if at is None else code.groups.get(at)
            if group is None:  # the `(` is inside a string or a comment
                continue
            outline = _js_outline(code, group.start + 2, group.end)
            tests[name] = TestBody(group.digest, _JS_EMPTY.fullmatch(outline) is not None, group.asserts)
    return tests


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
    scanner = _SCANNERS.get(language_of(path) or "")
    if scanner is None or len(source) > MAX_BYTES:
        return None
    return scanner(source.decode("utf-8", errors="replace"))
