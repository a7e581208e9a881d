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

Tests declared otherwise count too, each with its test as `parent` (`pyscan.TestBody.kind` says how sure the name
is): Go `t.Run("literal", …)` subtests and the entries of a table a test runs by a field (`{name: "x", …}`, or map
entries `"x": {…}` run by key), as `TestX/x`, its positional rows (`{"a", 1}`) as cases named by their source;
Rust rstest `#[case(…)]` and `#[test_case(…)]` cases, and tests written as macro invocations at item level of a
test file or a `#[cfg(test)]` module (`test!(dtd_03, …)`: the first argument names the test); JavaScript
`it.each`/`test.each`/`describe.each` rows (an array literal's entries, a template table's lines) as
`title[row]`; JUnit `@ValueSource`/`@CsvSource` values as `method[value]`. A declaration the scanners cannot
name (a Rust macro of another shape, a test-making `macro_rules!`, a `t.Run` or `test()` whose name is computed,
a `.each` over a variable, a `@MethodSource`) is kept, by its source, as one of unknown shape: gone or changed,
the App cannot tell.

Files over `MAX_BYTES` are not read (the App cannot tell); time is linear in the file's size. The files are
untrusted repository content: only read.
"""

from __future__ import annotations

import bisect
import hashlib
import posixpath
import re
from collections.abc import Callable, Iterator

from bot.pipeline.judge import code_blocks
from bot.pipeline.judge.code_blocks import Code, Group
from bot.pipeline.judge.pyscan import CASE, UNKNOWN, TestBody, TestMap

MAX_BYTES = 2 << 20
MAX_LINE = 4096  # a longer line is not scanned for names (minified code holds no test the App can name)
HEADER_TOKENS = 64  # how far after a test's name its body may begin (`-> Result<(), Box<dyn Error>> {`)

_GO = re.compile(r"^func\s+(Test\w{0,200})\s*\(")
_RUST_ATTR = re.compile(r"^\s*#\[(?:\w{1,40}::){0,3}(?:test|rstest|test_case)\b")
_RUST_MACRO_FN = re.compile(r"\bfn\s+\$")  # `fn $name` in a `macro_rules!`: the attribute was not one of a function
_RUST_QUALIFIERS = {"pub", "async", "unsafe", "const", "extern", "default"}
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
# A test whose name is computed (a template with `${…}`): a declaration the App cannot name.
_JS_COMPUTED = re.compile(r"""(?:^|[^\w.$])(?:test|it)(?:\.(?:only|skip|concurrent))?\s*(\()\s*`[^`\n]{0,300}?\$\{""")
_JS_EACH = re.compile(r"""(?:^|[^\w.$])(?:describe|test|it)(?:\.(?:only|skip|concurrent))?\.each\s*(\(|`)""")
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
# A JavaScript test call's arguments after the name, in outline (see `_js_outline`), that hold no test: none, or
# one empty function, perhaps after an options object and before a timeout.
_JS_EMPTY = re.compile(r"(?:\{…?\} )?(?:(?:async )?(?:function (?:w )?\(…?\)|\(…?\) =>|w =>) \{\} ?(?:w)?)?")

_WORD = re.compile(r"[^\W\d]\w{0,200}")
SNIPPET = 60  # characters of source that name a case or a declaration the scanners cannot name otherwise
# Item-level Rust macros that declare no test, and what may follow a test macro's name (`t!(a, …)`, `t!(a: …)`).
_RUST_NOT_TESTS = re.compile(
    r"(?:debug_)?assert\w*|panic|unreachable|todo|unimplemented|print\w*|eprint\w*|format\w*|write\w*|vec|"
    r"include\w*|concat\w*|stringify|env|option_env|cfg\w*|matches|dbg|compile_error|lazy_static|thread_local|"
    r"bitflags|module_path|file|line|column"
)
_RUST_KEYWORDS = {
    "as", "async", "const", "crate", "enum", "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop",
    "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
    "true", "type", "unsafe", "use", "where", "while",
}  # fmt: skip
_RUST_AFTER_NAME = {",", ":", "=>", ";", ")", "]", "}", "="}
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


def _parents(code: Code) -> tuple[list[int], dict[int, int]]:
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


def _snippet(text: str, code: Code, start: int, end: int, digest: str) -> str:
    """The source of tokens `start`..`end` (whose fingerprint is `digest`), its layout collapsed, shortened past
    `SNIPPET` characters with the digest's first characters, so two long ones that begin alike still differ."""
    stop = code.offsets[end] + len(code.tokens[end]) if end < len(code.tokens) else len(text)
    source = text[code.offsets[start] : min(stop, code.offsets[start] + 4 * SNIPPET)]
    shown = " ".join(source.split())
    if len(shown) <= SNIPPET and stop - code.offsets[start] <= 4 * SNIPPET:
        return shown
    return shown[: SNIPPET - 12] + "… " + digest[:8]


def _unquote(literal: str) -> str:
    """A string literal's text without its quotes (escapes left as written)."""
    return literal[1:-1] if len(literal) >= 2 and literal[-1] == literal[0] else literal[1:]


def _block_body(code: Code, offset: int, expects: bool) -> TestBody | None:
    """The function body after the name at `offset`: the first `{…}` after the parameters' `(…)` (none before a
    `;`); None when the name is not code (it is inside a string or a comment)."""
    i = code.token_at(offset)
    if i is None:
        return None
    group = _body_group(code, i)
    if group is None:  # no body: a declaration
        return _body(hashlib.sha256(b"").hexdigest(), True, expects, expects)
    return _body(group.digest, group.empty, group.asserts or expects, expects)


def _body_group(code: Code, i: int) -> Group | None:
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


def _scan_blocks(
    text: str, language: str, found: list[tuple[str, int, str]], code: Code | None = None
) -> TestMap | None:
    """The bodies of the tests found (name, the offset where it begins, the attribute lines before it)."""
    code = code if code is not None else code_blocks.parse(text, language, _ASSERTS[language])
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
    """`func TestX(` at the start of a line, and its subtests (`go_subtests`)."""
    found = [(m.group(1), o + m.start(1), "") for o, line in _lines(text) if (m := _GO.match(line))]
    code = code_blocks.parse(text, "go", _go_asserts)
    tests = _scan_blocks(text, "go", found, code)
    if tests is None or code is None:
        return None
    bodies = []
    for name, offset, _ in found:
        i = code.token_at(offset)
        group = None if i is None else _body_group(code, i)
        if group is not None:
            bodies.append((group.start, group.end, name))
    for name, body in go_subtests(text, code, bodies).items():
        tests.setdefault(name, body)
    return tests


def go_subtests(text: str, code: Code, bodies: list[tuple[int, int, str]]) -> TestMap:
    """The subtests of Go tests (`bodies`: each test's body, by token indexes, and its name), as `TestX/name`:
    `t.Run("literal", …)` calls; in a test that runs `t.Run(tc.F, …)`, the table entries `{F: "literal", …}`
    (in its body, or outside every test for the first test that runs that field), or with `t.Run(name, …)` the
    map entries `"literal": {…}`; positional rows of its own table (`{"a", 1, 2}`) are cases named by their
    source. A `t.Run` whose name is computed otherwise is a declaration of unknown shape."""
    bodies.sort()
    scan = _GoSubtestScan(text, code, bodies)
    scan.run_calls()
    scan.table_entries()
    return scan.found


_GoBody = tuple[int, int, str]  # a Go test's body (the token indexes of its braces) and the test's name


class _GoSubtestScan:
    """`go_subtests` over one file: the tests' bodies, sorted, and the subtests found so far, in the order found."""

    def __init__(self, text: str, code: Code, bodies: list[_GoBody]) -> None:
        self.text, self.code, self.tokens = text, code, code.tokens
        self.bodies, self.starts = bodies, [start for start, _, _ in bodies]
        self.parents, _ = _parents(code)
        self.found: TestMap = {}
        # test -> the fields its `t.Run(tc.F, …)` calls name ("" for `t.Run(name, …)`)
        self.keys: dict[str, set[str]] = {}

    def owner(self, i: int) -> _GoBody | None:
        """The test whose body holds token `i`."""
        k = bisect.bisect_right(self.starts, i) - 1
        return self.bodies[k] if k >= 0 and self.bodies[k][0] < i <= self.bodies[k][1] else None

    def run_calls(self) -> None:
        """Every `.Run(…)` call inside a test."""
        tokens, groups = self.tokens, self.code.groups
        for i, token in enumerate(tokens):
            if token != "Run" or _token(tokens, i - 1) != "." or i + 1 not in groups or (test := self.owner(i)) is None:
                continue
            self._run_call(i, test[2])

    def _run_call(self, i: int, test: str) -> None:
        """A literal name is a subtest; `tc.F` or `name` says which table entries are; any other is unknown."""
        tokens, groups = self.tokens, self.code.groups
        call, first, after = groups[i + 1], _token(tokens, i + 2), _token(tokens, i + 3)
        if first[:1] in ('"', "`") and after == ",":
            inner = next((groups[j] for j in range(i + 3, call.end) if tokens[j] == "{" and j in groups), None)
            trivial = inner is not None and inner.empty
            self.found[f"{test}/{_unquote(first)}"] = TestBody(call.digest, trivial, call.asserts, parent=test)
        elif _WORD.fullmatch(first) and after == "." and _token(tokens, i + 5) == ",":
            self.keys.setdefault(test, set()).add(_token(tokens, i + 4))
        elif _WORD.fullmatch(first) and after == ",":
            self.keys.setdefault(test, set()).add("")
        else:
            name = f"{test}/{_snippet(self.text, self.code, i + 1, call.end, call.digest)}"
            self.found[name] = TestBody(call.digest, False, False, UNKNOWN, test)

    def table_entries(self) -> None:
        """Every `{…}` where a table a test runs by a field may be: in a test that runs one, or outside every test."""
        every: set[str] = set().union(*self.keys.values()) if self.keys else set()
        shared = _SharedGoTables(self.tokens, self.parents, self.bodies, self.keys, every)
        for j, group in self.code.groups.items():
            if self.tokens[j] != "{":
                continue
            test = self.owner(j)
            fields = self.keys.get(test[2], set()) if test is not None else every
            if fields:
                self._table_group(j, group, test, fields, shared)

    def _table_group(
        self, j: int, group: Group, test: _GoBody | None, fields: set[str], shared: _SharedGoTables
    ) -> None:
        """An entry named by its field or map key (its test's subtest), else a positional row of the test's own."""
        entry, key = self._entry_name(j, fields)
        if entry:
            parent = test[2] if test is not None else shared.runner(j, key)
            self.found[f"{parent}/{entry}"] = TestBody(group.digest, False, False, parent=parent)
        elif (
            test is not None
            and fields - {""}
            and _token(self.tokens, j - 1) in ("{", ",")
            and self.parents[self.parents[j]] == test[0]
        ):
            row = f"{test[2]}[{_snippet(self.text, self.code, j, group.end, group.digest)}]"
            self.found.setdefault(row, TestBody(group.digest, False, False, CASE, test[2]))

    def _entry_name(self, j: int, fields: set[str]) -> tuple[str, str]:
        """The name the `{` at `j` gives a subtest, and the field it is run by: `{F: "name", …}` for a field F,
        `"name": {…}` ("") for `t.Run(name, …)`; ("", "") when neither."""
        tokens = self.tokens
        before, key, colon = _token(tokens, j - 1), _token(tokens, j + 1), _token(tokens, j + 2)
        if before in ("{", ",") and key in fields and colon == ":" and _token(tokens, j + 3)[:1] in ('"', "`"):
            return _unquote(_token(tokens, j + 3)), key
        if "" in fields and before == ":" and _token(tokens, j - 2)[:1] in ('"', "`"):
            return _unquote(_token(tokens, j - 2)), ""
        return "", ""


class _SharedGoTables:
    """Which test runs a table declared outside every test by a field: the first test running that field that names
    the table's variable, else the first that runs that field."""

    def __init__(
        self, tokens: list[str], parents: list[int], bodies: list[_GoBody], keys: dict[str, set[str]], every: set[str]
    ) -> None:
        self.tokens, self.parents = tokens, parents
        self.words = {test: set(tokens[start:end]) for start, end, test in bodies if test in keys}
        self.runs = {key: [test for test, fields in keys.items() if key in fields][:HEADER_TOKENS] for key in every}
        self.tops: dict[int, int] = {}  # a token -> its outermost enclosing group, remembered on the way up

    def runner(self, j: int, key: str) -> str:
        """The test that runs the table holding the `{` at `j` by `key`."""
        tokens, top = self.tokens, self._top(j)
        k = next((k for k in range(top - 1, max(top - HEADER_TOKENS, 0), -1) if tokens[k] == "="), 0)
        variable = _token(tokens, k - 2 if _token(tokens, k - 1) == ":" else k - 1)
        return next((test for test in self.runs[key] if variable in self.words[test]), self.runs[key][0])

    def _top(self, j: int) -> int:
        climbed = [j]
        while self.parents[climbed[-1]] >= 0 and climbed[-1] not in self.tops:
            climbed.append(self.parents[climbed[-1]])
        top = self.tops.get(climbed[-1], climbed[-1])
        self.tops.update(dict.fromkeys(climbed, top))
        return top


def _after_attribute(
    text: str,
    attribute: re.Pattern[str],
    name: Callable[[str], re.Match[str] | None],
    stop: re.Pattern[str] | None = None,
) -> list[tuple[str, int, str]]:
    """The functions that follow an attribute line (other attributes and blank lines may come between), each with
    the offset where its name begins and the text from its first attribute up to its name; a line that matches
    `stop` first ends the wait."""
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
        elif stop is not None and stop.search(line, start):
            pending = False
        elif not marked:
            header += line
        else:
            header = line
    return found


def rust_tests(text: str, test_file: bool = False) -> TestMap | None:
    """Functions marked `#[test]` (or `#[tokio::test]` and the like), and tests written as macro invocations
    (`rust_macro_tests`) in a test file (`test_file`: under `tests/`) or a `#[cfg(test)]` module."""
    code = code_blocks.parse(text, "rust", _rust_asserts)
    functions = _after_attribute(text, _RUST_ATTR, _RUST_FN.match, _RUST_MACRO_FN)
    tests = _scan_blocks(text, "rust", functions, code)
    if tests is None or code is None:
        return None
    parents, openers = _parents(code)
    for name, body in rust_attribute_cases(text, code, openers, functions).items():
        tests.setdefault(name, body)
    for name, body in rust_macro_tests(text, code, test_file, parents, openers).items():
        tests.setdefault(name, body)
    return tests


def rust_attribute_cases(
    text: str, code: Code, openers: dict[int, int], functions: list[tuple[str, int, str]]
) -> TestMap:
    """The cases of test functions made by attributes: rstest's `#[case(…)]` and the test_case crate's
    `#[test_case(…)]`, as `fn[name]` when named (`#[case::name(…)]`, `#[test_case(… ; "name")]`), else as cases
    named by their arguments' source."""
    tokens, found = code.tokens, {}
    for function, offset, _ in functions:
        i = code.token_at(offset)
        k = -1 if i is None else i - 2  # before `fn`
        while _token(tokens, k) in _RUST_QUALIFIERS or _token(tokens, k)[:1] == '"' or _token(tokens, k) == ")":
            k = openers.get(k, k) - 1
        while _token(tokens, k) == "]" and (opener := openers.get(k)) is not None and _token(tokens, opener - 1) == "#":
            kind, at = tokens[opener + 1], opener + 2
            named = kind == "case" and _token(tokens, at) == "::" and _WORD.fullmatch(_token(tokens, at + 1))
            at += 2 if named else 0
            args = code.groups.get(at) if kind in ("case", "test_case") and _token(tokens, at) == "(" else None
            if args is not None:
                label = tokens[at - 1] if named else ""
                if kind == "test_case" and _token(tokens, args.end - 2) == ";":
                    label = _unquote(tokens[args.end - 1]) if tokens[args.end - 1][:1] == '"' else ""
                if label:
                    found[f"{function}[{label}]"] = TestBody(args.digest, False, False, parent=function)
                elif args.end > at + 1:
                    row = _snippet(text, code, at + 1, args.end - 1, args.digest)
                    found[f"{function}[{row}]"] = TestBody(args.digest, False, False, CASE, function)
            k = opener - 2
    return found


def rust_macro_tests(text: str, code: Code, test_file: bool, parents: list[int], openers: dict[int, int]) -> TestMap:
    """Macro invocations at item level (not inside a function) of a test file or a `#[cfg(test)]` module: one
    whose first argument is an identifier (`test!(dtd_03, …)`, `case!(name: …)`) is a test by that name, any
    other (`tests! { … }`, `check!("…")`) a declaration of unknown shape named by its source, as is a
    `macro_rules!` there whose body declares tests (`#[test]`): the macro every such test is made from. Common
    macros that declare no test (`lazy_static!`, `assert!`, `include!` …) are left out."""
    tokens, found = code.tokens, {}
    memo: dict[int, bool | None] = {}
    for i, token in enumerate(tokens):
        if _token(tokens, i + 1) != "!" or not _WORD.fullmatch(token) or _token(tokens, i - 1) in (".", "!"):
            continue
        at = i + 3 if token == "macro_rules" else i + 2
        group = code.groups.get(at)
        if (
            group is None
            or _RUST_NOT_TESTS.fullmatch(token)
            or not _rust_test_context(code, parents, openers, i, test_file, memo)
        ):
            continue
        if token == "macro_rules":
            if any(tokens[k] == "#" and _token(tokens, k + 2) == "test" for k in range(at, group.end)):
                found[f"macro_rules! {_token(tokens, i + 2)} ({group.digest[:8]})"] = TestBody(
                    group.digest, False, False, UNKNOWN
                )
            continue
        first, after = _token(tokens, at + 1), _token(tokens, at + 2)
        if _WORD.fullmatch(first) and first not in _RUST_KEYWORDS and after in _RUST_AFTER_NAME:
            found.setdefault(first, TestBody(group.digest, group.empty, group.asserts))
        else:
            name = f"{token}!{_snippet(text, code, at, group.end, group.digest)}"
            found[name] = TestBody(group.digest, False, False, UNKNOWN)
    return found


def _rust_test_context(
    code: Code, parents: list[int], openers: dict[int, int], i: int, test_file: bool, memo: dict[int, bool | None]
) -> bool:
    """Token `i` is at item level (only `mod x { … }` blocks around it) of a test file or a `#[cfg(test)]`
    module. `memo`: each `mod` block's answer (None: not at item level), so no block is climbed twice."""
    climbed, p = [], parents[i]
    while p >= 0 and p not in memo:
        climbed.append(p)
        p = parents[p]
    state = memo.get(p, test_file) if p >= 0 else test_file
    for q in reversed(climbed):
        if state is not None and (code.tokens[q] != "{" or _token(code.tokens, q - 2) != "mod"):
            state = None
        elif state is not None:
            state = state or _cfg_test_before(code.tokens, openers, q - 2)
        memo[q] = state
    return bool(state)


def _cfg_test_before(tokens: list[str], openers: dict[int, int], mod: int) -> bool:
    """The item whose `mod` keyword is token `mod` carries a `#[cfg(test)]` attribute (or `#[cfg(all(test, …))]`)."""
    k = mod - 1
    if _token(tokens, k) == ")":  # pub(crate)
        k = openers.get(k, k) - 1
    if _token(tokens, k) == "pub":
        k -= 1
    while _token(tokens, k) == "]" and (opener := openers.get(k)) is not None:
        if _token(tokens, opener + 1) == "cfg" and "test" in tokens[opener + 2 : k]:
            return True
        k = opener - 2  # before its `#`
    return False


def java_tests(text: str) -> TestMap | None:
    """Methods marked JUnit `@Test` (or `@ParameterizedTest`, with its cases: `java_source_cases`)."""
    code = code_blocks.parse(text, "java", _java_asserts)
    methods = _after_attribute(text, _JAVA_ATTR, _JAVA_METHOD.search)
    tests = _scan_blocks(text, "java", methods, code)
    if tests is None or code is None:
        return None
    for name, body in java_source_cases(text, code, methods).items():
        tests.setdefault(name, body)
    return tests


def java_source_cases(text: str, code: Code, methods: list[tuple[str, int, str]]) -> TestMap:
    """The cases of parameterized JUnit tests: each value of a `@ValueSource(ints = {…})` or `@CsvSource({…})`
    before the method (an array's entries, or the one value), as `method[value]` named by its source; a
    `@MethodSource`, `@CsvFileSource` or `@ArgumentsSource` (cases held elsewhere) is one declaration of unknown
    shape."""
    tokens, found = code.tokens, {}
    openers = _parents(code)[1] if methods else {}
    for method, offset, _ in methods:
        i = code.token_at(offset)
        k, steps = -1 if i is None else i - 1, 0
        while k >= 0 and tokens[k] not in (";", "{", "}") and steps < HEADER_TOKENS:  # back over its annotations
            steps += 1
            opener = openers.get(k) if tokens[k] == ")" else None
            if opener is None:
                k -= 1
                continue
            kind, group = _token(tokens, opener - 1), code.groups[opener]
            if kind in ("ValueSource", "CsvSource"):
                for a, b in _elements(code, group):
                    key, a = (tokens[a], a + 2) if _token(tokens, a + 1) == "=" else ("value", a)
                    if a > b or (kind == "CsvSource" and key not in ("value", "textBlock")):
                        continue
                    array = code.groups.get(a) if tokens[a] == "{" and openers.get(b) == a else None
                    for x, y in _elements(code, array) if array is not None else [(a, b)]:
                        digest = _range_digest(code, x, y)
                        found[f"{method}[{_snippet(text, code, x, y, digest)}]"] = TestBody(
                            digest, False, False, CASE, method
                        )
            elif kind in ("MethodSource", "CsvFileSource", "ArgumentsSource"):
                name = f"{method}[@{kind}{_snippet(text, code, opener, k, group.digest)}]"
                found[name] = TestBody(group.digest, False, False, UNKNOWN, method)
            k = opener - 1
    return found


def js_tests(text: str) -> TestMap | None:
    """The literal names of `test(…)` and `it(…)` calls (`.only`, `.skip` too), each with its call's arguments as
    its body; template strings with `${` are not literal and are left out."""
    code = code_blocks.parse(text, "javascript", _js_asserts)
    if code is None:
        return None
    tests: TestMap = {}
    templates: dict[int, int] | None = None  # each template literal's first token -> its last
    covered = -1  # the last token of the `.each` template tables read so far
    for offset, line in _lines(text):
        for m in _JS.finditer(line):
            name = next(g for g in m.groups()[1:] if g is not None)
            at = code.token_at(offset + m.start(1))
            group = None if at is None else code.groups.get(at)
            if group is None:  # the `(` is inside a string or a comment
                continue
            outline = _js_outline(code, group.start + 2, group.end)
            tests[name] = TestBody(group.digest, _JS_EMPTY.fullmatch(outline) is not None, group.asserts)
        for m in _JS_COMPUTED.finditer(line):
            at = code.token_at(offset + m.start(1))
            if at is not None and (group := code.groups.get(at)) is not None:
                name = _snippet(text, code, at - 1, group.end, group.digest)
                tests[name] = TestBody(group.digest, False, False, UNKNOWN)
        for m in _JS_EACH.finditer(line):
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
        if _token(tokens, at + 1) == "[" and (table := code.groups.get(at + 1)) is not None:
            spans = [(a, b, _range_digest(code, a, b)) for a, b in _elements(code, table)]
            rows = [(_snippet(text, code, a, b, d), d) for a, b, d in spans]
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
    title = _token(tokens, title_at + 1) if _token(tokens, title_at) == "(" else ""
    parent = _unquote(title) if title[:1] in ("'", '"', "`") else "each"
    if not rows and tokens[at] == "(":
        call = code.groups[at]
        name = f"{parent}[{_snippet(text, code, at + 1, call.end - 1, call.digest)}]"
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


def _elements(code: Code, group: Group) -> list[tuple[int, int]]:
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


def _range_digest(code: Code, start: int, end: int) -> str:
    """The fingerprint of tokens `start`..`end`, each nested group by its own digest (no token hashed twice)."""
    parts, i = [], start
    while i <= end:
        group = code.groups.get(i)
        parts.append(code.tokens[i] + (group.digest if group is not None else ""))
        i = group.end + 1 if group is not None else i + 1
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


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
    language = language_of(path) or ""
    scanner = _SCANNERS.get(language)
    if scanner is None or len(source) > MAX_BYTES:
        return None
    text = source.decode("utf-8", errors="replace")
    return rust_tests(text, rust_test_file(path)) if language == "rust" else scanner(text)


def rust_test_file(path: str) -> bool:
    """A Rust file that holds only tests: under a `tests/` (or `test/`) folder, or a `tests.rs` module file."""
    *folders, name = path.split("/")
    return bool({"tests", "test"} & set(folders)) or name in ("tests.rs", "test.rs") or name.endswith("_tests.rs")
