"""Getting rid of a failing test, or stalling the worker's dropped-tests check, with the files an agent may write."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from bot.pipeline.candidates import DroppedTests
from bot.pipeline.judge import code_blocks, pyscan, test_scanners, trees
from bot.pipeline.judge.dropped import MAX_BYTES, dropped_tests
from bot.repo_config.schema import RepoConfig
from tests.support.buggy_repos import build
from tests.support.candidates import CALC, FIX, calc_base, candidate

GLOBS = RepoConfig().test_paths
OPS = "tests/test_ops.py"
HEAD = "import unittest\n\nfrom calc import mul\n\n\nclass MulTest(unittest.TestCase):\n    def test_mul(self):\n"
KEPT = HEAD + "        self.assertEqual(mul(2, 3), 6)\n"


def _check(tmp_path: Path, *files: tuple[str, str | None], cancel: threading.Event | None = None) -> DroppedTests:
    base = calc_base(tmp_path)
    change = candidate(base, 9, *files).change
    assert change is not None
    trees.base_tree(base, tmp_path / "after")
    trees.apply(tmp_path / "after", change.diff)
    return dropped_tests(base, tmp_path / "after", change.paths, GLOBS, cancel)


@pytest.mark.parametrize(
    "body",
    ["        pass\n", "        ...\n", '        """Checks mul."""\n', "        mul(2, 3)\n"],
    ids=["pass", "ellipsis", "docstring", "no-assertion"],
)
def test_a_test_emptied_in_place_is_dropped(tmp_path: Path, body: str) -> None:
    found = _check(tmp_path, FIX, (OPS, HEAD + body))
    assert found.tests == [f"{OPS}::MulTest::test_mul"]


def test_a_test_deleted_and_redefined_empty_elsewhere_is_dropped(tmp_path: Path) -> None:
    found = _check(tmp_path, FIX, (OPS, None), ("tests/test_moved.py", HEAD + "        pass\n"))
    assert found.tests == [f"{OPS}::MulTest::test_mul"]


def test_a_test_moved_with_an_equivalent_body_or_reformatted_is_kept(tmp_path: Path) -> None:
    reformatted = KEPT.replace("mul(2, 3), 6)", "mul(2,  3),   6)  # same statements")
    found = _check(tmp_path, FIX, (OPS, None), ("tests/test_moved.py", reformatted))
    assert found.tests == [] and found.unparsed == []


@pytest.mark.parametrize(
    "source",
    [b"x=1\n" * (MAX_BYTES // 4 - 1), b"t = (" + b"1," * (MAX_BYTES // 2 - 8) + b")\n"],
    ids=["many-lines", "huge-tuple"],
)
def test_a_file_costly_to_parse_cannot_be_told_and_does_not_stall(tmp_path: Path, source: bytes) -> None:
    assert len(source) <= MAX_BYTES
    assert pyscan.python_tests(source, MAX_BYTES) is None  # the limited child gave up, the worker did not parse
    found = _check(tmp_path, FIX, (OPS, source.decode()))
    assert found.unparsed == [OPS] and found.tests == []


def test_a_stopped_job_reads_no_more_files(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    found = _check(tmp_path, FIX, (OPS, HEAD + "        pass\n"), cancel=stop)
    assert found.unparsed == [OPS] and found.tests == []


GO_TEST = (
    'package calc\n\nimport "testing"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fail()\n\t}\n}\n'
)
JS_TEST = "const assert = require('node:assert');\n\ntest('muls', () => assert.strictEqual(mul(2, 3), 6));\n"
# The test's header inside a raw string, then a helper with the test's very body: the name is not code, so no test.
GO_DECOY = "package calc\n\nvar _ = `\nfunc TestMul(t *testing.T) {`\n\nfunc helper(t *testing.T) {\n"
GO_DECOY += "\tif Mul(2, 3) != 6 {\n\t\tt.Fail()\n\t}\n}\n"


@pytest.mark.parametrize(
    ("path", "test", "elsewhere", "decoy"),
    [
        # the original body kept in a comment and a string beside the empty test does not make it equivalent
        (
            "calc_test.go",
            GO_TEST,
            "other_test.go",
            'package calc\n\nfunc TestMul(t *testing.T) {\n\t_ = "t.Fatal("\n}\n',
        ),
        (
            "test/calc.test.js",
            JS_TEST,
            "test/other.test.js",
            f"// {JS_TEST.splitlines()[2]}\ntest('muls', () => {{}});\n",
        ),
        ("calc_test.go", GO_TEST, "other_test.go", GO_DECOY),
    ],
    ids=["go", "javascript", "go-name-in-a-string"],
)
def test_a_test_deleted_and_defined_empty_elsewhere_is_dropped_in_go_and_js(
    tmp_path: Path, path: str, test: str, elsewhere: str, decoy: str
) -> None:
    base = build(replace(CALC, files={**CALC.files, path: test}), tmp_path / "calc")
    change = candidate(base, 9, (path, None), (elsewhere, decoy)).change
    assert change is not None
    trees.base_tree(base, tmp_path / "after")
    trees.apply(tmp_path / "after", change.diff)
    found = dropped_tests(base, tmp_path / "after", change.paths, [*GLOBS, "*_test.go", "test/**"])
    name = "TestMul" if path.endswith(".go") else "muls"
    assert found.tests == [f"{path}::{name}"] and found.unparsed == []


HEADER = b"func TestA(t *testing.T) {\n"
TOKENS = code_blocks.MAX_TOKENS


@pytest.mark.parametrize(
    "source",
    [
        HEADER + b"{" * (TOKENS - 100),  # nesting deeper than any recursion could go
        HEADER + b"(" * 1000 + b")]}" * ((TOKENS - 2000) // 3),  # closers of the wrong kind or with no opener
        HEADER + b"/*" * (test_scanners.MAX_BYTES // 4),  # comments that never end
        HEADER + (b'"' + b"x" * 40 + b"\n") * (test_scanners.MAX_BYTES // 50),  # strings that never end
    ],
    ids=["deep", "unmatched", "unterminated-comments", "unterminated-strings"],
)
def test_hostile_go_files_are_read_in_one_pass(source: bytes) -> None:
    found = test_scanners.scan("a_test.go", source)  # no recursion, no rescanning: it returns
    assert found is not None and set(found) == {"TestA"}


def test_a_file_of_too_many_tokens_cannot_be_told() -> None:
    assert test_scanners.scan("a_test.go", HEADER + b"x " * (TOKENS + 1)) is None


def test_hostile_js_regex_starts_are_bounded() -> None:
    source = b"test('a', () => {\n" + b"(/[" * (TOKENS // 3 - 10) + b"});\n"
    found = test_scanners.scan("a.test.js", source)
    assert found is not None and set(found) == {"a"}


@pytest.mark.parametrize(
    ("path", "source", "some"),
    [
        # a macro deep inside nested modules: each module's context is found once, not climbed per invocation
        ("tests/a.rs", b"mod a {\n" * (TOKENS // 8) + b"t!(x, 1);\n" * (TOKENS // 16), "x"),
        ("src/a.rs", b"#[cfg(test)] mod a {\n" * (TOKENS // 20) + b"t!(x, 1);\n" * (TOKENS // 16), "x"),
        # `.each` templates that never end, one inside the other: no table is read twice
        ("a.test.js", b"test.each`${\n" * (TOKENS // 5), None),
        ("a.test.js", b"test.each`a\n" + b"${test.each`a\n${1}\n" * (TOKENS // 12) + b"}`" * (TOKENS // 12), "[${1}]"),
        # many tests that run tables by a field, and many tables outside them
        (
            "a_test.go",
            b"func TestA(t *testing.T) { t.Run(tc.name, f) }\n" * (TOKENS // 40)
            + b'var x = []T{{name: "a"}}\n' * (TOKENS // 30),
            "TestA/a",
        ),
        ("a_test.go", b"func TestA(t *testing.T) {\n t.Run(tc.in, f)\n" + b"{" * (TOKENS - 100), "TestA"),
        # JUnit methods with no bodies between them: each one's annotations are looked for a bounded way back
        (
            "src/test/java/ATest.java",
            b"class A {\n" + b"@Test void a() @ValueSource(ints = {1})\n" * (TOKENS // 16),
            "a[1]",
        ),
    ],
    ids=[
        "rust-deep-modules",
        "rust-cfg-test-modules",
        "js-open-templates",
        "js-nested-tables",
        "go-tables",
        "go-deep",
        "java-no-bodies",
    ],
)
def test_hostile_files_of_every_declaration_form_are_read_in_linear_time(path: str, source: bytes, some: str) -> None:
    found = test_scanners.scan(path, source)  # returns: each token is visited a bounded number of times
    assert found is not None
    assert some is None or any(some in name for name in found), list(found)[:5]
