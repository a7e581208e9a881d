"""`mini-fix show OUT`: a run's steps, patch and verdict read back from its output directory, nothing run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import structlog

from bot.cli.main import main

REPLY = "THOUGHT: fix it.\n\n```mswea_bash_command\nsed -i 's/-/+/' calc.py\n```"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> object:
    """main() configures logging onto the test's captured stdout: put structlog back for the tests after this one."""
    yield
    structlog.reset_defaults()


def _run_dir(tmp_path: Path, verdicts: dict[str, object], patch: str = "diff --git a/calc.py b/calc.py\n") -> Path:
    out = tmp_path / "out"
    out.mkdir()
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": REPLY},
        {"role": "user", "content": "<returncode>0</returncode>", "extra": {"raw_output": "", "returncode": 0}},
    ]
    info = {"exit_status": "Submitted", "model_stats": {"api_calls": 2}}
    (out / "trajectory.json").write_text(json.dumps({"messages": messages, "info": info, "mini_fix": verdicts}))
    (out / "patch.diff").write_text(patch)
    return out


def test_a_fix_backed_by_its_test_reads_fixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = {
        "test": {"command": "python3 -m pytest -q", "returncode": 0, "passed": True},
        "reproduction": {"files": ["tests/test_add.py"], "fails_before": True, "passes_after": True, "valid": True},
    }
    assert main(["show", str(_run_dir(tmp_path, verdicts))]) == 0
    out = capsys.readouterr().out
    assert "$ sed -i 's/-/+/' calc.py" in out
    assert "diff --git a/calc.py b/calc.py" in out
    assert "test of the bug (tests/test_add.py): before the change fails, after it passes" in out
    assert "RESULT: fixed" in out


def test_failing_tests_are_not_a_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = {"test": {"command": "go test ./...", "returncode": 1, "passed": False}}
    assert main(["show", str(_run_dir(tmp_path, verdicts)), "--no-steps"]) == 1
    out = capsys.readouterr().out
    assert "FAIL (exit 1)" in out and "RESULT: not shown to be a fix" in out and "$ sed" not in out


def test_a_missing_tool_is_said_plainly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = {"test": {"command": "npm test", "returncode": 127, "passed": False, "missing_tool": "mocha"}}
    assert main(["show", str(_run_dir(tmp_path, verdicts))]) == 1
    assert "could not run: `mocha` is missing" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("verdict", "summary", "said"),
    [
        ("no tests ran", "unittest: Ran 0 tests, OK", "NO TESTS RAN — unittest: Ran 0 tests, OK"),
        ("could not run", "the Python module `semver` is not installed", "could not run the tests: the Python module"),
        ("failed", "the test script: In total, 47455 of 47456 tests passed", "FAIL (exit 0) — the test script"),
    ],
)
def test_tests_that_ran_none_or_could_not_run_are_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verdict: str, summary: str, said: str
) -> None:
    test = {"command": "npm test", "returncode": 0, "passed": False, "verdict": verdict, "summary": summary}
    assert main(["show", str(_run_dir(tmp_path, {"test": test})), "--no-steps"]) == 1
    out = capsys.readouterr().out
    assert said in out and "RESULT: not shown to be a fix" in out


def test_no_change_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(_run_dir(tmp_path, {}, patch=""))]) == 1
    assert "RESULT: no change was proposed" in capsys.readouterr().out


@pytest.mark.parametrize("content", [None, "not json", "[1, 2]"])
def test_a_directory_without_a_run_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    if content is not None:
        (tmp_path / "trajectory.json").write_text(content)
    assert main(["show", str(tmp_path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_dropped_tests_and_a_doubt_about_them_are_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    passed = {"command": "cargo test --offline", "returncode": 0, "passed": True}
    doubt = {"tests": [], "uncertain": ['tests/main.rs::fuzz_cases!{ "<!DOCTYPE>" }'], "unparsed": [], "unchecked": []}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert main(["show", str(_run_dir(tmp_path / "a", {"test": passed, "dropped_tests": doubt}))]) == 0
    out = capsys.readouterr().out
    assert 'whether it drops tests cannot be told: gone are tests/main.rs::fuzz_cases!{ "<!DOCTYPE>" }' in out
    dropped = {**doubt, "tests": ["tests/doctype.rs::dtd_03"]}
    assert main(["show", str(_run_dir(tmp_path / "b", {"test": passed, "dropped_tests": dropped}))]) == 1
    out = capsys.readouterr().out
    assert "drops existing tests: tests/doctype.rs::dtd_03" in out and "cannot be told" not in out
