"""Checks the agent ran in any language, a heredoc's text left out, exit 127/126 as a missing tool."""

from __future__ import annotations

import pytest

from bot.pipeline.attempts.missing import describe, missing_tool
from bot.pipeline.publish.checks import checks_from_steps, without_heredocs
from bot.pipeline.publish.transcript import Step


def step(command: str, code: int = 0, output: str = "ok\n") -> Step:
    return Step(n=1, thought="", command=command, output=output, returncode=code)


@pytest.mark.parametrize(
    "command",
    ["node test.js", "node --test", "node test/ops.test.mjs", "npm run test-unit", "npm run test:ci", "go test ./..."],
)
def test_javascript_and_go_test_runs_are_checks(command: str) -> None:
    assert [c.verdict for c in checks_from_steps([step(command)])] == ["passed"]


def test_text_inside_a_heredoc_is_not_a_check() -> None:
    submission = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat <<'EOF'\nI ran go test ./... and npm test\nEOF"
    assert checks_from_steps([step(submission)]) == []
    assert without_heredocs("cat <<EOF > f\npytest\nEOF\npytest -q") == "cat <<EOF > f\npytest -q"
    assert [c.command for c in checks_from_steps([step("cat <<EOF > f\nx\nEOF\ncargo test")])] == [
        "cat <<EOF > f\nx\nEOF\ncargo test"
    ]


def test_exit_127_is_a_missing_tool_not_a_failed_test() -> None:
    check = checks_from_steps([step("go test ./...", 127, "bash: line 1: go: command not found\n")])[0]
    assert (check.verdict, check.missing_tool) == ("missing", "go")
    check = checks_from_steps([step("go test ./...", 1, "FAIL\n")])[0]
    assert (check.verdict, check.missing_tool) == ("failed", None)


def test_the_missing_tool_is_named_from_the_shell_else_the_command() -> None:
    assert missing_tool(127, "sh: 1: cargo: not found\n", "cargo test") == "cargo"
    assert missing_tool(126, "", "CI=1 ./run-tests.sh") == "./run-tests.sh"
    assert missing_tool(1, "x: command not found", "x") is None
    assert missing_tool(127, "@everyone `rm` <b>: command not found", "node --test") == "node"
    assert "not found in the sandbox image (exit 127)" in describe("go", 127)
