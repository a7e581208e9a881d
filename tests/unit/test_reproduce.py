"""Which of a change's files are its reproduction test, and the command that runs only those files."""

from __future__ import annotations

import pytest

from bot.pipeline.judge import reproduce
from bot.pipeline.judge.reproduce import command, infer, matches, runnable, template
from bot.repo_config.schema import RepoConfig

DEFAULT_GLOBS = RepoConfig().test_paths


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/test_add.py", True),
        ("test_add.py", True),
        ("pkg/sub/test_add.py", True),
        ("pkg/add_test.py", True),
        ("tests/fixtures/data.json", True),
        ("src/pkg/tests/helpers.py", True),
        ("test/x.c", True),
        ("calc/ops.py", False),
        ("contest.py", False),
        ("latest/notes.md", False),
    ],
)
def test_default_test_paths(path: str, is_test: bool) -> None:
    assert matches(path, DEFAULT_GLOBS) is is_test


def test_test_files_are_the_new_or_changed_test_paths_still_there() -> None:
    paths = ["calc/ops.py", "tests/test_b.py", "tests/test_a.py", "tests/test_gone.py", "tests/test_a.py"]
    present = {"calc/ops.py", "tests/test_a.py", "tests/test_b.py"}
    assert reproduce.test_files(paths, DEFAULT_GLOBS, present.__contains__) == ["tests/test_a.py", "tests/test_b.py"]
    assert reproduce.test_files(paths, ["spec/**"], present.__contains__) == []


@pytest.mark.parametrize(
    ("test", "inferred"),
    [
        ("python3 -m pytest -q tests", "python3 -m pytest -q {files}"),
        ("pytest", "pytest {files}"),
        (".venv/bin/pytest -x -k 'slow and not net' tests/unit", ".venv/bin/pytest -x {files}"),
        ("PYTHONPATH=src python -m pytest", "PYTHONPATH=src python -m pytest {files}"),
        ("python3 -m unittest discover -s tests -t .", "python3 -m unittest {files}"),
        ("python -m unittest", "python -m unittest {files}"),
        ("make test", None),
        ("tox -e py311", None),
        ("npm test", None),  # package.json's script decides (infer.py)
        ("go test ./...", "go test {packages} -run {pattern}"),
        ("cargo test --offline", "cargo test --offline -- {names}"),
        ("npx jest --ci", "npx jest {files}"),
        ("node --test", "node --test {files}"),
        ("pip install -e . && pytest", None),
        ("pytest | tee log", None),
        ("pytest 'unterminated", None),
    ],
)
def test_the_reproduce_command_is_inferred_from_the_runner_the_test_command_names(
    test: str, inferred: str | None
) -> None:
    assert infer(test) == inferred


def test_an_explicit_reproduce_command_wins_with_or_without_files() -> None:
    assert template(RepoConfig(reproduce="npx jest {files}", test="pytest")) == ("npx jest {files}", "")
    # Without `{files}` it runs a package or the whole suite (go test ./..., cargo test): used as it is.
    assert template(RepoConfig(reproduce="go test ./...")) == ("go test ./...", "")
    assert command("go test ./...", ["a_test.go"]) == "go test ./..."
    none, why = template(RepoConfig())
    assert none is None and "neither `reproduce` nor `test`" in why
    none, why = template(RepoConfig(test="make check"))
    assert none is None and "set `reproduce`" in why
    assert template(RepoConfig(test="go test ./...")) == ("go test {packages} -run {pattern}", "")


def test_files_are_quoted_and_only_python_ones_go_to_an_inferred_command() -> None:
    files = ["tests/test_a.py", "tests/data; rm -rf x.json", "tests/it's.py"]
    assert command("python3 -m pytest {files}", files[:1] + files[2:]) == (
        "python3 -m pytest tests/test_a.py 'tests/it'\"'\"'s.py'"
    )
    assert runnable("python3 -m pytest -q {files}", files) == ["tests/test_a.py", "tests/it's.py"]
    assert runnable("./run-one.sh {files}", files) == files  # a runner mini-fix does not know: every file


@pytest.mark.parametrize(
    ("template", "files", "names", "expected"),
    [
        ("go test {packages} -run {pattern}", ["calc/add_test.go"], ["TestAdd"], "go test ./calc -run '^(TestAdd)$'"),
        (
            "go test {packages} -run {pattern}",
            ["a_test.go", "x/b_test.go"],
            ["TestA", "TestB"],
            "go test . ./x -run '^(TestA|TestB)$'",
        ),
        ("go test {packages} -run {pattern}", ["calc/add_test.go"], [], "go test ./calc -run ."),  # extended a test
        (
            "cargo test --offline -- {names}",
            ["tests/more.rs"],
            ["subs", "dtd_03"],
            "cargo test --offline -- subs dtd_03",
        ),
        ("cargo test --offline -- {names}", ["src/lib.rs"], [], "cargo test --offline -- "),
        (
            "mvn -o -B test -Dtest={classes}",
            ["src/test/java/calc/CalcTest.java", "src/test/java/ZeroTest.java"],
            [],
            "mvn -o -B test -Dtest=CalcTest,ZeroTest",
        ),
        ("node --test {files}", ["test/a b.test.js"], [], "node --test 'test/a b.test.js'"),
        ("npx jest {files}", ["src/__tests__/sum.test.ts"], [], "npx jest src/__tests__/sum.test.ts"),
        # a value is filled once: a path holding a placeholder is not filled again, names are identifiers only
        ("pytest {files}", ["tests/{names}.py"], ["x"], "pytest 'tests/{names}.py'"),
        ("cargo test -- {names}", ["t.rs"], ["ok_name", "$(boom)", "a;b"], "cargo test -- ok_name"),
    ],
)
def test_each_ecosystem_runs_one_test_file_or_test(
    template: str, files: list[str], names: list[str], expected: str
) -> None:
    assert command(template, files, names) == expected


def test_the_files_each_runner_is_given() -> None:
    files = ["a_test.go", "helper.go", "tests/t.rs", "src/test/java/FooTest.java", "src/test/java/my-data.java",
             "test/a.test.js", "test/b.spec.ts", "test/fixture.json", "tests/test_a.py"]  # fmt: skip
    assert runnable("go test {packages} -run {pattern}", files) == ["a_test.go"]
    assert runnable("cargo test --offline -- {names}", files) == ["tests/t.rs"]
    assert runnable("mvn -o test -Dtest={classes}", files) == ["src/test/java/FooTest.java"]
    assert runnable("npx vitest run {files}", files) == ["test/a.test.js", "test/b.spec.ts"]
    assert runnable("python3 -m unittest {files}", files) == ["tests/test_a.py"]
    assert runnable("gradle test --offline", ["src/test/groovy/FooSpec.groovy"]) == ["src/test/groovy/FooSpec.groovy"]


def test_the_tests_a_change_adds_are_read_from_the_hosts_diff() -> None:
    diff = """diff --git a/calc/add_test.go b/calc/add_test.go
--- a/calc/add_test.go
+++ b/calc/add_test.go
@@ -1,3 +1,9 @@
 func TestOld(t *testing.T) {}
+func TestAddNegative(t *testing.T) {
+}
+func helper() {}
+func FuzzAdd(f *testing.F) {}
diff --git a/tests/xml.rs b/tests/xml.rs
--- a/tests/xml.rs
+++ b/tests/xml.rs
@@ -1,2 +1,12 @@
+#[test]
+fn parses_cdata() {}
+#[tokio::test]
+#[should_panic]
+async fn rejects_nul() {}
+fn not_a_test() {}
+test!(dtd_03, "<!DOCTYPE x>", Token::Dtd);
+    assert_eq!(x, 1);
diff --git a/other_test.go b/other_test.go
+++ b/other_test.go
+func TestNotGiven(t *testing.T) {}
"""
    found = reproduce.added_tests(diff, ["calc/add_test.go", "tests/xml.rs"])
    assert found == ["TestAddNegative", "FuzzAdd", "parses_cdata", "rejects_nul", "dtd_03"]
