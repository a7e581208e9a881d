"""The bracket groups of a Go, Rust, Java or JavaScript source file, each with a fingerprint, in linear time.

A small lexer (never a parser) splits the text into tokens, skipping layout and comments and keeping each string
literal whole, so a brace inside a string or a comment is not a brace. One pass over the tokens then pairs the
brackets and gives every group the sha256 of what it holds, nested groups counted by their own digests (a Merkle
tree: each token is hashed once however deep the nesting, so no input costs more than linear work), and whether
it holds an assertion-like call (the language's `Asserts` rule, applied at each token with a few tokens of
context). The input is untrusted repository content: unterminated strings and comments end at the line or the
file, unmatched closers are ordinary tokens, and an unclosed group ends at the end of the file.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_TOKENS = 250_000  # a file with more is not read (None: the App cannot tell): about 1 MB of ordinary code

Asserts = Callable[[list[str], int], bool]
"""Whether the token at an index (with its neighbours) is an assertion-like call in the language."""

_STRINGS = {
    # Go: interpreted strings end at the line, raw strings at the next backquote; runes are a few characters.
    "go": r'"(?:[^"\\\n]|\\.)*"?|`[^`]*`?|\'(?:[^\'\\\n]|\\[^\n]{1,9}?)\'',
    # Rust: strings may span lines; a lone `'` is a lifetime; raw strings `r#"…"#` are ended by `_rust_raw_end`.
    "rust": r'(?P<raw>b?r#*")|b?"(?:[^"\\]|\\.)*(?:"|\Z)|b?\'(?:[^\'\\\n]|\\[^\n]{1,9}?)\'',
    "java": r'"""(?:[^"\\]|\\.|"(?!""))*(?:"""|\Z)|"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\[^\n]{1,9}?)\'',
    # JavaScript: a backquote starts a template literal (`_js_template`); regular expressions are `_JS_REGEX`.
    "javascript": r'"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|(?P<template>`)',
}
_LEXERS = {
    language: re.compile(
        rf"(?P<skip>\s+|//[^\n]*|/\*.*?(?:\*/|\Z))|(?P<string>{strings})|(?P<word>[^\W\d][\w$]*|\$[\w$]*|\d[\w.]*)"
        r"|(?P<punct>=>|::|->|.)",
        re.DOTALL,
    )
    for language, strings in _STRINGS.items()
}
_TEMPLATE_CHUNK = re.compile(r"(?:[^`\\$]|\\.|\$(?!\{))*(?:`|\$\{|\\?\Z)", re.DOTALL)
# A `/` where an operand is expected starts a regular expression; its length is bounded, so a `/` with no end on
# its line costs a bounded attempt, not a scan of the rest of the file.
_JS_REGEX = re.compile(r"/(?:[^/\\\n\[]|\\.|\[(?:[^\]\\\n]|\\.){0,200}\]){1,1000}/[A-Za-z]{0,10}")
_JS_OPERAND_BEFORE_SLASH = re.compile(r"[\w$)\]}'\"`]")
_JS_KEYWORDS_BEFORE_REGEX = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw"}
CLOSER = {"(": ")", "[": "]", "{": "}"}
_CLOSING = tuple(CLOSER.values())


@dataclass(frozen=True)
class Group:
    """One bracket pair: token indexes of its opener and closer, what it holds, in digest and in kind."""

    start: int
    end: int  # the closer's index; len(tokens) when the file ends first
    digest: str  # sha256 of the tokens inside, each nested group as its own digest
    empty: bool  # nothing inside but `;`
    asserts: bool  # an assertion-like call somewhere inside


@dataclass(frozen=True)
class Code:
    """A file's tokens, the offset where each begins, and its groups keyed by the opener's token index."""

    tokens: list[str]
    offsets: list[int]
    groups: dict[int, Group]

    def index_at(self, offset: int) -> int:
        """The first token that begins at or after `offset` in the text."""
        return bisect.bisect_left(self.offsets, offset)

    def token_at(self, offset: int) -> int | None:
        """The index of the token that begins exactly at `offset`; None when that is inside a string or a comment
        (or between tokens)."""
        i = self.index_at(offset)
        return i if i < len(self.offsets) and self.offsets[i] == offset else None


def parse(text: str, language: str, asserts: Asserts) -> Code | None:
    """The tokens and bracket groups of `text` in `language` (go, rust, java or javascript); None when it holds
    more than `MAX_TOKENS` tokens."""
    lexed = tokenize(text, language)
    return None if lexed is None else Code(*lexed, _groups(lexed[0], asserts))


def tokenize(text: str, language: str) -> tuple[list[str], list[int]] | None:
    """Tokens (layout and comments dropped, strings whole) and the offsets where they begin; None past
    `MAX_TOKENS`."""
    lexer = _LEXERS[language]
    tokens: list[str] = []
    offsets: list[int] = []
    templates: list[int] = []  # JavaScript: the brace depths at which a template's `${` is open
    pos = depth = 0
    while pos < len(text):
        start = pos
        if language == "javascript" and (regex := _js_regex(text, pos, tokens)):
            token, pos = regex, pos + len(regex)
        else:
            m = lexer.match(text, pos)
            assert m is not None  # `punct` matches any one character
            token, pos = m.group(), m.end()
            if m.lastgroup == "skip":
                continue
            if m.group("raw") if language == "rust" else None:
                pos = _rust_raw_end(text, m)
                token = text[start:pos]
            elif (m.group("template") if language == "javascript" else None) or (
                token == "}" and templates and templates[-1] == depth
            ):
                if token == "}":
                    templates.pop()
                    depth -= 1
                chunk, pos = _js_template(text, pos)
                token += chunk
                if chunk.endswith("${"):
                    depth += 1
                    templates.append(depth)
            elif token in ("{", "}"):
                depth += 1 if token == "{" else -1
        tokens.append(token)
        offsets.append(start)
        if len(tokens) > MAX_TOKENS:
            return None
    return tokens, offsets


def _rust_raw_end(text: str, m: re.Match[str]) -> int:
    """The end of a Rust raw string: its closing quote followed by as many `#` as it opened with (else the file's
    end)."""
    hashes = m.group("raw").count("#")
    close = text.find('"' + "#" * hashes, m.end())
    return len(text) if close < 0 else close + 1 + hashes


def _js_template(text: str, pos: int) -> tuple[str, int]:
    """A template literal's text from `pos`: up to its closing backquote or its next `${` (both included)."""
    m = _TEMPLATE_CHUNK.match(text, pos)
    assert m is not None  # the pattern matches the empty string
    return m.group(), m.end()


def _js_regex(text: str, pos: int, tokens: list[str]) -> str | None:
    """A regular-expression literal at `pos`, where the token before it leaves an operand expected."""
    if text[pos] != "/" or text.startswith(("//", "/*"), pos):
        return None
    before = tokens[-1] if tokens else ""
    if before and before not in _JS_KEYWORDS_BEFORE_REGEX and _JS_OPERAND_BEFORE_SLASH.match(before[-1]):
        return None
    m = _JS_REGEX.match(text, pos)
    return m.group() if m else None


def _groups(tokens: list[str], asserts: Asserts) -> dict[int, Group]:
    """Pair the brackets in one pass; a closer of another kind than the innermost opener closes the groups opened
    after its own opener, and a closer with no opener at all is an ordinary token."""
    groups: dict[int, Group] = {}
    stack: list[_Open] = []
    opened = dict.fromkeys(_CLOSING, 0)  # open groups per closer, so an unmatched closer costs no stack walk
    for i, token in enumerate(tokens):
        if opened.get(token):
            while True:
                top = stack.pop()
                opened[top.closer] -= 1
                _close(groups, stack, top, i)
                if top.closer == token:
                    break
            continue
        if stack:
            top = stack[-1]
            if token not in CLOSER:
                top.parts.append(token.encode("utf-8", "surrogatepass"))
            top.asserts = top.asserts or asserts(tokens, i)
            top.empty = top.empty and token == ";"
        if token in CLOSER:
            stack.append(_Open(i, CLOSER[token]))
            opened[CLOSER[token]] += 1
    while stack:
        _close(groups, stack, stack.pop(), len(tokens))
    return groups


@dataclass
class _Open:
    """A group still open while pairing: what it holds so far."""

    start: int
    closer: str
    parts: list[bytes] = field(default_factory=list)
    asserts: bool = False
    empty: bool = True


def _close(groups: dict[int, Group], stack: list[_Open], group: _Open, end: int) -> None:
    """Record a closed group and count it, by its kind and digest, in the group around it."""
    digest = hashlib.sha256(b"\0".join(group.parts)).hexdigest()
    groups[group.start] = Group(group.start, end, digest, group.empty, group.asserts)
    if stack:
        outer = stack[-1]
        outer.parts.append(group.closer.encode() + digest.encode())
        outer.asserts = outer.asserts or group.asserts
