"""Existing tests a change drops, found by the worker in its own trees with Python's `ast` (nothing is run)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from bot.pipeline.judge import trees
from bot.pipeline.judge.dropped import MAX_BYTES, defined_tests, dropped_tests
from bot.repo_config.schema import RepoConfig
from tests.support.buggy_repos import build
from tests.support.candidates import CALC, FIX, REPRO, calc_base, candidate

GLOBS = RepoConfig().test_paths
SUITE = """import unittest


def test_module_level():
    pass


async def test_async():
    pass


def helper():
    pass


class OpsTest(unittest.TestCase):
    def setUp(self):
        pass

    def test_add(self):
        pass

    class Inner:
        def test_nested(self):
            pass
"""


def _after(base: Path, where: Path, *files: tuple[str, str | None]) -> tuple[Path, list[str]]:
    """The tree the worker's git builds from a candidate writing (or deleting) `files`, and the change's paths."""
    change = candidate(base, 9, *files).change
    assert change is not None
    trees.base_tree(base, where)
    trees.apply(where, change.diff)
    return where, change.paths


def test_test_functions_and_methods_are_read_from_the_source_never_run() -> None:
    names = defined_tests(SUITE.encode())
    assert names == {"test_module_level", "test_async", "OpsTest::test_add", "OpsTest::Inner::test_nested"}
    assert defined_tests(b"import os; os._exit(3)\ndef test_x(): pass\n") == {"test_x"}  # parsed, not imported
    assert defined_tests(b"def test_x(:\n") is None  # not Python: nobody can tell
    assert defined_tests(b"def test_x(): pass\0\n") is None
    assert defined_tests(b"#" * (MAX_BYTES + 1)) is None


def test_a_rewritten_test_file_that_loses_a_test_is_found(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    rewritten = REPRO[1].replace("AddTest", "MulTest")  # the real 1.5B's calc attempt: MulTest.test_mul gone
    after, paths = _after(base, tmp_path / "after", FIX, ("tests/test_ops.py", rewritten))
    found = dropped_tests(base, after, paths, GLOBS)
    assert found.tests == ["tests/test_ops.py::MulTest::test_mul"] and found.unparsed == found.unchecked == []


def test_kept_tests_new_files_and_code_files_drop_nothing(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    kept = (base / "tests/test_ops.py").read_text() + "\n    def test_more(self):\n        pass\n"
    after, paths = _after(base, tmp_path / "after", FIX, REPRO, ("tests/test_ops.py", kept))
    found = dropped_tests(base, after, paths, GLOBS)
    assert found.tests == [] and found.unparsed == [] and found.unchecked == []


def test_a_deleted_test_file_drops_all_its_tests_and_bad_syntax_cannot_be_told(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    after, paths = _after(base, tmp_path / "deleted", FIX, ("tests/test_ops.py", None))
    assert dropped_tests(base, after, paths, GLOBS).tests == ["tests/test_ops.py::MulTest::test_mul"]

    shutil.rmtree(base.parent / "attempt-9")
    after, paths = _after(base, tmp_path / "broken", ("tests/test_ops.py", "class MulTest(:\n"))
    found = dropped_tests(base, after, paths, GLOBS)
    assert found.tests == [] and found.unparsed == ["tests/test_ops.py"]


def test_test_files_in_a_language_with_no_scanner_are_listed_as_not_checked(tmp_path: Path) -> None:
    ruby = {"tests/ops_test.rb": "def test_mul; end\n", "tests/fixture.json": "{}\n"}
    base = build(replace(CALC, files={**CALC.files, **ruby}), tmp_path / "calc")
    after, paths = _after(base, tmp_path / "after", ("tests/ops_test.rb", "# gone\n"), ("tests/fixture.json", "[]\n"))
    found = dropped_tests(base, after, paths, GLOBS)
    assert found.unchecked == ["tests/ops_test.rb"] and found.tests == [] and found.unparsed == []


def test_go_rust_java_and_js_tests_a_change_drops_are_found_by_their_scanners(tmp_path: Path) -> None:
    files = {
        "ops_test.go": "package ops\n\nfunc TestAdd(t *testing.T) {}\n\nfunc TestMul(t *testing.T) {}\n",
        "src/lib.rs": "pub fn add() {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {}\n}\n",
        "tests/lib.rs": "#[test]\nfn osa_distance_works() {}\n",
        "src/test/java/OpsTest.java": "class OpsTest {\n  @Test\n  void mul() {}\n  @Test void add() {}\n}\n",
        "test/ops.test.js": "test('mul', () => {});\nit(\"adds\", () => {});\n",
    }
    base = build(replace(CALC, files={**CALC.files, **files}), tmp_path / "calc")
    after, paths = _after(
        base,
        tmp_path / "after",
        ("ops_test.go", "package ops\n\nfunc TestAdd(t *testing.T) {}\n"),
        ("src/lib.rs", "pub fn add() {}\n"),
        ("tests/lib.rs", None),
        ("src/test/java/OpsTest.java", "class OpsTest {\n  @Test void add() {}\n}\n"),
        ("test/ops.test.js", "it('adds', () => {});\n"),
    )
    globs = [*GLOBS, "*_test.go", "src/test/**"]
    found = dropped_tests(base, after, paths, globs)
    assert found.tests == [
        "ops_test.go::TestMul",
        "src/lib.rs::adds",
        "src/test/java/OpsTest.java::mul",
        "test/ops.test.js::mul",
        "tests/lib.rs::osa_distance_works",
    ]
    assert found.unchecked == found.unparsed == []


def test_a_go_test_moved_to_another_file_of_the_change_is_kept(tmp_path: Path) -> None:
    files = {"a_test.go": "package a\n\nfunc TestOne(t *testing.T) {}\n"}
    base = build(replace(CALC, files={**CALC.files, **files}), tmp_path / "calc")
    moved = ("b_test.go", "package a\n\nfunc TestOne(t *testing.T) {}\n")
    after, paths = _after(base, tmp_path / "after", ("a_test.go", "package a\n"), moved)
    assert dropped_tests(base, after, paths, ["*_test.go"]).tests == []


def test_a_test_moved_to_another_test_file_is_not_dropped(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    old = (base / "tests/test_ops.py").read_text()
    assert "class MulTest" in old and "def test_mul" in old
    after, paths = _after(
        base, tmp_path / "after", FIX, ("tests/test_ops.py", None), ("tests/unit/test_mul.py", old), REPRO
    )
    found = dropped_tests(base, after, paths, GLOBS)
    assert found.tests == [] and found.unparsed == []


# Per language: a test file with one asserting test, the same test emptied in place, and a file it may move to.
EMPTIED = {
    "go": (
        "calc_test.go",
        'package calc\n\nimport "testing"\n\n'
        'func TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal("mul")\n\t}\n}\n',
        'package calc\n\nimport "testing"\n\nfunc TestMul(t *testing.T) {\n\tMul(2, 3)\n}\n',
        "more_test.go",
    ),
    "rust": (
        "tests/lib.rs",
        "#[test]\nfn muls() {\n    assert_eq!(calc::mul(2, 3), 6);\n}\n",
        "#[test]\nfn muls() {}\n",
        "tests/more.rs",
    ),
    "java": (
        "src/test/java/calc/CalcTest.java",
        "class CalcTest {\n  @Test\n  void muls() {\n    assertEquals(6, Calc.mul(2, 3));\n  }\n}\n",
        "class CalcTest {\n  @Test\n  void muls() {\n    Calc.mul(2, 3);\n  }\n}\n",
        "src/test/java/calc/MoreTest.java",
    ),
    "javascript": (
        "test/calc.test.js",
        "test('muls', () => assert.strictEqual(mul(2, 3), 6));\n",
        "test('muls', () => {});\n",
        "test/more.test.js",
    ),
}
POLYGLOT_GLOBS = [*GLOBS, "*_test.go", "src/test/**", "test/**"]


def _polyglot(tmp_path: Path, language: str) -> Path:
    path, kept, _, _ = EMPTIED[language]
    return build(replace(CALC, files={**CALC.files, path: kept}), tmp_path / "calc")


@pytest.mark.parametrize("language", list(EMPTIED))
def test_a_test_emptied_in_place_is_dropped_in_every_language(tmp_path: Path, language: str) -> None:
    path, _, emptied, _ = EMPTIED[language]
    base = _polyglot(tmp_path, language)
    after, paths = _after(base, tmp_path / "after", (path, emptied))
    found = dropped_tests(base, after, paths, POLYGLOT_GLOBS)
    assert [t.rsplit("::", 1)[1] for t in found.tests] == [next(n for n in ("TestMul", "muls") if n in emptied)]


@pytest.mark.parametrize("language", list(EMPTIED))
def test_a_moved_test_is_kept_only_with_an_equivalent_body(tmp_path: Path, language: str) -> None:
    path, kept, emptied, other = EMPTIED[language]
    base = _polyglot(tmp_path, language)
    reformatted = kept.replace("(2, 3)", "(2,  3)").replace("\n}", "  // moved here\n}")
    after, paths = _after(base, tmp_path / "moved", (path, None), (other, reformatted))
    assert dropped_tests(base, after, paths, POLYGLOT_GLOBS).tests == []

    shutil.rmtree(base.parent / "attempt-9")
    after, paths = _after(base, tmp_path / "emptied", (path, None), (other, emptied))
    assert dropped_tests(base, after, paths, POLYGLOT_GLOBS).tests == [
        f"{path}::{'TestMul' if language == 'go' else 'muls'}"
    ]
