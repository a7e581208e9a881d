"""The PR body: diffstat, the agent's defused summary, the checks it ran as its trajectory shows them."""

from __future__ import annotations

import pytest

from bot.agent.loop import AgentResult
from bot.github.gateway import Issue
from bot.pipeline.publish.checks import checks_from_steps, untrusted_summary
from bot.pipeline.publish.pr import _body, pr_body_vars
from bot.pipeline.publish.transcript import Step

DIFF = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-    return a - b\n+    return a + b\n"
)


def step(n: int, command: str, code: int | None, output: str = "ok\n") -> Step:
    return Step(n, "", command, output, code)


@pytest.mark.parametrize(
    ("command", "code", "verdict"),
    [
        ("cd /repo && python -m pytest -q", 0, "passed"),
        ("pytest tests/test_calc.py", 1, "failed"),
        ("python -m pytest -q 2>&1 | tail -5", 0, "unknown"),  # tail's code, not pytest's
        ("pytest; echo done", 0, "unknown"),
        ("pytest || true", 0, "unknown"),
        ("pytest -x && echo ok", 0, "passed"),
        ("pytest -q > out.txt 2>&1", 0, "passed"),
        ("npm test", 2, "failed"),
        ("go test ./...", 0, "passed"),
        ("cargo test", 0, "passed"),
        ("make test", 0, "passed"),
        ("tox -e py311", None, "unknown"),
        ("python -m unittest discover", 0, "passed"),
    ],
)
def test_checks_trust_only_the_tests_own_exit_code(command: str, code: int | None, verdict: str) -> None:
    [check] = checks_from_steps([step(1, command, code)])
    assert check.verdict == verdict


@pytest.mark.parametrize("command", ["ls", "cat pytest.ini", "grep -r mytest .", "echo make testing", "sed -n 1p t.py"])
def test_commands_that_are_not_tests_are_not_checks(command: str) -> None:
    assert checks_from_steps([step(1, command, 0)]) == []


def test_the_summary_cannot_ping_or_close_issues() -> None:
    text = untrusted_summary("Fixes #12, closes acme/other#3. cc @octocat " + "x" * 5000)
    assert "@octocat" not in text and "Fixes #12" not in text and "closes acme/other#3" not in text
    assert len(text) <= 3000


def body_for(messages: list[dict[str, object]], submission: str = "Changed add() to add.") -> str:
    result = AgentResult("Submitted", submission, 3, 900, 50, 0.0, 12.0, messages)
    run = {"run_id": "r1", "model": "hosted_vllm/m", "requester": "alice", "retry": False, "exit_status": "Submitted"}
    issue = Issue(3, "add() subtracts", "", "alice")
    return _body(
        pr_body_vars(issue, run, result, DIFF, "https://fix.example.com/runs/r1?sig=abc"), draft_fallback=False
    )


def reply(command: str) -> dict[str, object]:
    return {"role": "assistant", "content": f"THOUGHT\n\n```mswea_bash_command\n{command}\n```"}


def observation(output: str, code: int) -> dict[str, object]:
    return {"role": "user", "content": output, "extra": {"raw_output": output, "returncode": code}}


def test_the_body_shows_what_changed_the_summary_checks_and_how_to_retry() -> None:
    messages = [reply("python -m pytest -q"), observation("1 failed, 2 passed\n", 1),
                reply("python -m pytest -q"), observation("3 passed in 0.1s\n", 0)]  # fmt: skip
    body = body_for(messages, "Fixed it. Fixes #99 @octocat")
    assert body.startswith("Fixes #3") and "`calc.py` | 1 | 1" in body
    assert "Fixes #99" not in body and "@octocat" not in body
    assert ":x: exit 1" in body and ":white_check_mark: exit 0" in body and "3 passed in 0.1s" in body
    assert "/agent retry" in body and "https://fix.example.com/runs/r1?sig=abc" in body


def test_without_test_commands_the_body_says_the_change_is_untested() -> None:
    body = body_for([reply("sed -i s/-/+/ calc.py"), observation("", 0)])
    assert "This change is untested" in body and ":white_check_mark:" not in body


def test_a_check_and_a_test_command_that_hit_a_missing_tool_say_which_tool() -> None:
    messages = [reply("go test ./..."), observation("bash: line 1: go: command not found\n", 127)]
    body = body_for(messages)
    assert "not run: <code>go</code> is not in the sandbox image (exit 127)" in body and ":x: exit 127" not in body
    vars_ = pr_body_vars(
        Issue(3, "t", "", "alice"),
        {"run_id": "r1", "model": "m", "requester": "a", "retry": False, "exit_status": "Submitted"},
        AgentResult("Submitted", "s", 3, 900, 50, 0.0, 12.0, messages),
        DIFF,
        None,
    )
    test = {
        "command": "cargo test --offline",
        "returncode": 127,
        "passed": False,
        "output": "",
        "missing_tool": "cargo",
    }
    body = _body({**vars_, "test": test}, draft_fallback=False)
    assert "**could not run the tests**: <code>cargo</code> is not in the sandbox image (exit code 127)" in body


@pytest.mark.parametrize(
    ("verdict", "summary", "said"),
    [
        ("no tests ran", "unittest: Ran 0 tests, OK", "**ran no test** (unittest: Ran 0 tests, OK)"),
        (
            "could not run",
            "Maven could not resolve a dependency: Non-resolvable import POM",
            "**could not run the tests**: Maven could not resolve a dependency: Non-resolvable import POM",
        ),
        ("failed", "the test script: In total, 47455 of 47456 tests passed", "**failed** (exit code 0; the test"),
        ("passed", "pytest: 3 passed", "` passed (pytest: 3 passed) with the agent's change"),
    ],
)
def test_the_pr_says_whether_the_tests_passed_failed_ran_none_or_could_not_run(
    verdict: str, summary: str, said: str
) -> None:
    messages = [reply("sed -i s/-/+/ calc.py"), observation("", 0)]
    vars_ = pr_body_vars(
        Issue(3, "t", "", "alice"),
        {"run_id": "r1", "model": "m", "requester": "a", "retry": False, "exit_status": "Submitted"},
        AgentResult("Submitted", "s", 3, 900, 50, 0.0, 12.0, messages),
        DIFF,
        None,
    )
    test = {"command": "npm test", "returncode": 0, "passed": verdict == "passed", "output": "", "verdict": verdict,
            "summary": summary}  # fmt: skip
    body = _body({**vars_, "test": test}, draft_fallback=False)
    assert said in body
    assert ("` passed" in body) is (verdict == "passed")
