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
        ("npm test", None),
        ("pip install -e . && pytest", None),
        ("pytest | tee log", None),
        ("pytest 'unterminated", None),
    ],
)
def test_the_reproduce_command_is_inferred_from_pytest_and_unittest_only(test: str, inferred: str | None) -> None:
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


def test_files_are_quoted_and_only_python_ones_go_to_an_inferred_command() -> None:
    files = ["tests/test_a.py", "tests/data; rm -rf x.json", "tests/it's.py"]
    assert command("python3 -m pytest {files}", files[:1] + files[2:]) == (
        "python3 -m pytest tests/test_a.py 'tests/it'\"'\"'s.py'"
    )
    assert runnable(RepoConfig(test="pytest"), files) == ["tests/test_a.py", "tests/it's.py"]
    assert runnable(RepoConfig(reproduce="jest {files}"), files) == files
