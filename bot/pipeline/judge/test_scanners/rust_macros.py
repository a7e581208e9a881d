"""The Rust tests `cargo test` runs that are written as macro invocations (`test!(dtd_03, …)`): projects with
many similar tests generate them, so a test file or `#[cfg(test)]` module holds item-level calls where `#[test]`
functions would be. Read from the tokens, which know what is at item level; an invocation whose first argument is
an identifier names its test, any other shape (and a test-making `macro_rules!`) is kept, by its source, as a
declaration of unknown shape: gone or changed, the App cannot tell.
"""

from __future__ import annotations

import re

from bot.pipeline.judge.code_blocks import Code
from bot.pipeline.judge.pyscan import UNKNOWN, TestBody, TestMap
from bot.pipeline.judge.test_scanners.common import WORD, peek, snippet

_NOT_TESTS = re.compile(
    r"(?:debug_)?assert\w*|panic|unreachable|todo|unimplemented|print\w*|eprint\w*|format\w*|write\w*|vec|"
    r"include\w*|concat\w*|stringify|env|option_env|cfg\w*|matches|dbg|compile_error|lazy_static|thread_local|"
    r"bitflags|module_path|file|line|column"
)
_KEYWORDS = {
    "as", "async", "const", "crate", "enum", "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop",
    "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
    "true", "type", "unsafe", "use", "where", "while",
}  # fmt: skip
_AFTER_NAME = {",", ":", "=>", ";", ")", "]", "}", "="}


def rust_macro_tests(text: str, code: Code, test_file: bool, parents: list[int], openers: dict[int, int]) -> TestMap:
    """Macro invocations at item level (not inside a function) of a test file or a `#[cfg(test)]` module: one
    whose first argument is an identifier (`test!(dtd_03, …)`, `case!(name: …)`) is a test by that name, any
    other (`tests! { … }`, `check!("…")`) a declaration of unknown shape named by its source, as is a
    `macro_rules!` there whose body declares tests (`#[test]`): the macro every such test is made from. Common
    macros that declare no test (`lazy_static!`, `assert!`, `include!` …) are left out."""
    tokens, found = code.tokens, {}
    memo: dict[int, bool | None] = {}
    for i, token in enumerate(tokens):
        if peek(tokens, i + 1) != "!" or not WORD.fullmatch(token) or peek(tokens, i - 1) in (".", "!"):
            continue
        at = i + 3 if token == "macro_rules" else i + 2
        group = code.groups.get(at)
        if (
            group is None
            or _NOT_TESTS.fullmatch(token)
            or not _rust_test_context(code, parents, openers, i, test_file, memo)
        ):
            continue
        if token == "macro_rules":
            if any(tokens[k] == "#" and peek(tokens, k + 2) == "test" for k in range(at, group.end)):
                found[f"macro_rules! {peek(tokens, i + 2)} ({group.digest[:8]})"] = TestBody(
                    group.digest, False, False, UNKNOWN
                )
            continue
        first, after = peek(tokens, at + 1), peek(tokens, at + 2)
        if WORD.fullmatch(first) and first not in _KEYWORDS and after in _AFTER_NAME:
            found.setdefault(first, TestBody(group.digest, group.empty, group.asserts))
        else:
            name = f"{token}!{snippet(text, code, at, group.end, group.digest)}"
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
        if state is not None and (code.tokens[q] != "{" or peek(code.tokens, q - 2) != "mod"):
            state = None
        elif state is not None:
            state = state or _cfg_test_before(code.tokens, openers, q - 2)
        memo[q] = state
    return bool(state)


def _cfg_test_before(tokens: list[str], openers: dict[int, int], mod: int) -> bool:
    """The item whose `mod` keyword is token `mod` carries a `#[cfg(test)]` attribute (or `#[cfg(all(test, …))]`)."""
    k = mod - 1
    if peek(tokens, k) == ")":  # pub(crate)
        k = openers.get(k, k) - 1
    if peek(tokens, k) == "pub":
        k -= 1
    while peek(tokens, k) == "]" and (opener := openers.get(k)) is not None:
        if peek(tokens, opener + 1) == "cfg" and "test" in tokens[opener + 2 : k]:
            return True
        k = opener - 2  # before its `#`
    return False
