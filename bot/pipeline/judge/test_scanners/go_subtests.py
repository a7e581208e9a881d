"""The subtests `go test` runs inside a Go test, as `TestX/name` (the name `go test -run` matches): literal
`t.Run("name", …)` calls, and the entries of a table the test runs by a field (`{name: "x", …}` run by
`t.Run(tc.name, …)`) or by key (map entries `"x": {…}` run by `t.Run(name, …)`), read from the tokens because Go's
table-driven tests name their cases in data, not code; the test's own positional rows (`{"a", 1}`) are cases named
by their source, and a `t.Run` whose name is computed otherwise is kept, by its source, as a declaration of unknown
shape (gone or changed, the App cannot tell).
"""

from __future__ import annotations

import bisect

from bot.pipeline.judge.code_blocks import Code, Group
from bot.pipeline.judge.pyscan import CASE, UNKNOWN, TestBody, TestMap
from bot.pipeline.judge.test_scanners.common import HEADER_TOKENS, WORD, nesting, peek, snippet, unquote


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
        self.parents, _ = nesting(code)
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
            if token != "Run" or peek(tokens, i - 1) != "." or i + 1 not in groups or (test := self.owner(i)) is None:
                continue
            self._run_call(i, test[2])

    def _run_call(self, i: int, test: str) -> None:
        """A literal name is a subtest; `tc.F` or `name` says which table entries are; any other is unknown."""
        tokens, groups = self.tokens, self.code.groups
        call, first, after = groups[i + 1], peek(tokens, i + 2), peek(tokens, i + 3)
        if first[:1] in ('"', "`") and after == ",":
            inner = next((groups[j] for j in range(i + 3, call.end) if tokens[j] == "{" and j in groups), None)
            trivial = inner is not None and inner.empty
            self.found[f"{test}/{unquote(first)}"] = TestBody(call.digest, trivial, call.asserts, parent=test)
        elif WORD.fullmatch(first) and after == "." and peek(tokens, i + 5) == ",":
            self.keys.setdefault(test, set()).add(peek(tokens, i + 4))
        elif WORD.fullmatch(first) and after == ",":
            self.keys.setdefault(test, set()).add("")
        else:
            name = f"{test}/{snippet(self.text, self.code, i + 1, call.end, call.digest)}"
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
            and peek(self.tokens, j - 1) in ("{", ",")
            and self.parents[self.parents[j]] == test[0]
        ):
            row = f"{test[2]}[{snippet(self.text, self.code, j, group.end, group.digest)}]"
            self.found.setdefault(row, TestBody(group.digest, False, False, CASE, test[2]))

    def _entry_name(self, j: int, fields: set[str]) -> tuple[str, str]:
        """The name the `{` at `j` gives a subtest, and the field it is run by: `{F: "name", …}` for a field F,
        `"name": {…}` ("") for `t.Run(name, …)`; ("", "") when neither."""
        tokens = self.tokens
        before, key, colon = peek(tokens, j - 1), peek(tokens, j + 1), peek(tokens, j + 2)
        if before in ("{", ",") and key in fields and colon == ":" and peek(tokens, j + 3)[:1] in ('"', "`"):
            return unquote(peek(tokens, j + 3)), key
        if "" in fields and before == ":" and peek(tokens, j - 2)[:1] in ('"', "`"):
            return unquote(peek(tokens, j - 2)), ""
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
        variable = peek(tokens, k - 2 if peek(tokens, k - 1) == ":" else k - 1)
        return next((test for test in self.runs[key] if variable in self.words[test]), self.runs[key][0])

    def _top(self, j: int) -> int:
        climbed = [j]
        while self.parents[climbed[-1]] >= 0 and climbed[-1] not in self.tops:
            climbed.append(self.parents[climbed[-1]])
        top = self.tops.get(climbed[-1], climbed[-1])
        self.tops.update(dict.fromkeys(climbed, top))
        return top
