"""The tests `cargo test` runs: functions marked `#[test]` (or `#[tokio::test]`, `#[rstest]`, `#[test_case(…)]`
and the like), in `tests/` and beside the code in `src/` alike, found as the first `fn` after an attribute line
because Rust marks a test by attribute only; rstest `#[case(…)]` and `#[test_case(…)]` lines are its cases
(`rust_attribute_cases`), and tests written as item-level macro invocations come from `rust_macros`. A body asserts
when it holds the `assert*!`/`debug_assert*!`/`panic!`/`unreachable!` macros or `.unwrap()`/`.expect(` and their
`_err` forms (a test fails on them; `?` alone only passes errors on); `#[should_panic]` counts as an assertion and
is part of the test's fingerprint.
"""

from __future__ import annotations

import re

from bot.pipeline.judge import code_blocks
from bot.pipeline.judge.code_blocks import Code
from bot.pipeline.judge.pyscan import CASE, TestBody, TestMap
from bot.pipeline.judge.test_scanners.common import WORD, after_attribute, nesting, peek, scan_blocks, snippet, unquote
from bot.pipeline.judge.test_scanners.rust_macros import rust_macro_tests

_ATTR = re.compile(r"^\s*#\[(?:\w{1,40}::){0,3}(?:test|rstest|test_case)\b")
_MACRO_FN = re.compile(r"\bfn\s+\$")  # `fn $name` in a `macro_rules!`: the attribute was not one of a function
_QUALIFIERS = {"pub", "async", "unsafe", "const", "extern", "default"}
# the rest of an attribute (`#[test] fn x`, `#[tokio::test(flavor = "…")] async fn y`) may come first
_FN = re.compile(
    r"^(?:[^\n]{0,300}?\]\s*)?\s*(?:pub(?:\([\w:]{0,40}\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w{1,200})"
)

_MACROS = re.compile(r"(?:debug_)?assert\w*|panic|unreachable")
_FAILS = {"unwrap", "expect", "unwrap_err", "expect_err"}
_SHOULD_PANIC = re.compile(r"#\[\s*should_panic\b")


def _rust_asserts(tk: list[str], i: int) -> bool:
    word, after = tk[i], peek(tk, i + 1)
    if after == "!":
        return _MACROS.fullmatch(word) is not None
    return word in _FAILS and peek(tk, i - 1) == "." and after == "("


def rust_tests(text: str, test_file: bool = False) -> TestMap | None:
    """Functions marked `#[test]` (or `#[tokio::test]` and the like), and tests written as macro invocations
    (`rust_macro_tests`) in a test file (`test_file`: under `tests/`) or a `#[cfg(test)]` module."""
    code = code_blocks.parse(text, "rust", _rust_asserts)
    functions = after_attribute(text, _ATTR, _FN.match, _MACRO_FN)
    if code is None:
        return None
    tests = scan_blocks(code, functions, _SHOULD_PANIC)
    parents, openers = nesting(code)
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
        while peek(tokens, k) in _QUALIFIERS or peek(tokens, k)[:1] == '"' or peek(tokens, k) == ")":
            k = openers.get(k, k) - 1
        while peek(tokens, k) == "]" and (opener := openers.get(k)) is not None and peek(tokens, opener - 1) == "#":
            kind, at = tokens[opener + 1], opener + 2
            named = kind == "case" and peek(tokens, at) == "::" and WORD.fullmatch(peek(tokens, at + 1))
            at += 2 if named else 0
            args = code.groups.get(at) if kind in ("case", "test_case") and peek(tokens, at) == "(" else None
            if args is not None:
                label = tokens[at - 1] if named else ""
                if kind == "test_case" and peek(tokens, args.end - 2) == ";":
                    label = unquote(tokens[args.end - 1]) if tokens[args.end - 1][:1] == '"' else ""
                if label:
                    found[f"{function}[{label}]"] = TestBody(args.digest, False, False, parent=function)
                elif args.end > at + 1:
                    row = snippet(text, code, at + 1, args.end - 1, args.digest)
                    found[f"{function}[{row}]"] = TestBody(args.digest, False, False, CASE, function)
            k = opener - 2
    return found


def rust_test_file(path: str) -> bool:
    """A Rust file that holds only tests: under a `tests/` (or `test/`) folder, or a `tests.rs` module file."""
    *folders, name = path.split("/")
    return bool({"tests", "test"} & set(folders)) or name in ("tests.rs", "test.rs") or name.endswith("_tests.rs")
