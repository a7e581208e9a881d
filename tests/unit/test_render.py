"""What mini-fix writes on GitHub: the trajectory comment's size budget, the outcome table, the templates."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bot.pipeline.publish.transcript import elide_middle, render_trajectory, steps_from_messages
from bot.render import PROMPTS_DIR, diffstat, fence, nomention, outcome, render

RUN = {"run_id": "r1", "model": "m", "requester": "alice", "retry": False, "exit_status": "Submitted"}


def _messages(steps: int, output_size: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for n in range(steps):
        command = f"grep -rn 'needle_{n}' src/ | head -n {n}"
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: step {n}\n\n```mswea_bash_command\n{command}\n```",
                "extra": {"actions": [{"command": command}]},
            }
        )
        output = f"start-{n} " + "o" * output_size + f" end-{n}"
        messages.append(
            {
                "role": "user",
                "content": f"<returncode>0</returncode>\n<output>\n{output}</output>",
                "extra": {"raw_output": output, "returncode": 0},
            }
        )
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}})
    return messages


def test_250_steps_of_100kb_fit_in_one_comment_with_every_command() -> None:
    steps = steps_from_messages(_messages(250, 100_000))
    body = render_trajectory(steps, run=RUN, exit_status="Submitted", run_link="https://x/runs/r1")
    assert len(body) <= 65_536
    for n in range(250):
        assert f"grep -rn 'needle_{n}' src/ | head -n {n}" in body
    assert "omitted" in body and "Full trajectory: https://x/runs/r1" in body
    assert body.count("<details") == body.count("</details>")


def test_a_few_long_outputs_keep_their_ends() -> None:
    body = render_trajectory(
        steps_from_messages(_messages(5, 100_000)), run=RUN, exit_status="Submitted", run_link=None
    )
    assert len(body) <= 65_536
    assert all(f"start-{n}" in body and f"end-{n}" in body for n in range(5))
    assert "characters elided" in body and "runs/r1/trajectory.json" in body


def test_short_trajectory_is_shown_whole() -> None:
    body = render_trajectory(steps_from_messages(_messages(3, 50)), run=RUN, exit_status="Submitted", run_link=None)
    assert "elided" not in body and "o" * 50 in body and "THOUGHT: step 2" in body


def test_format_errors_show_as_steps_without_a_command() -> None:
    messages = [
        {"role": "assistant", "content": "no fence here"},
        {"role": "user", "content": "Expected exactly 1 action", "extra": {"interrupt_type": "FormatError"}},
    ]
    [step] = steps_from_messages(messages)
    assert step.command is None and step.kind == "format error"


def test_fence_outgrows_backticks_in_the_text() -> None:
    assert fence("a ```` b").startswith("`````\n")
    assert elide_middle("abcdefghij" * 10, 30)[1] == 70


def test_model_text_cannot_mention_people() -> None:
    assert nomention("thanks @octocat") == "thanks @\u200boctocat"


@pytest.mark.parametrize("key", sorted(yaml.safe_load((PROMPTS_DIR / "outcomes.yaml").read_text())))
def test_every_outcome_renders_a_comment_that_says_how_to_retry(key: str) -> None:
    done = outcome(key, run=RUN, paths=[".github/workflows/ci.yml"])
    body = render("outcome_comment.md", outcome=done, run=RUN, detail="why", stats=None, links={"run": None})
    assert done.headline in body and "How to retry" in body and "{{" not in body
    assert done.reaction in ("rocket", "confused", "")


def test_pr_body_says_fixes_and_draft_fallback() -> None:
    diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n-a\n+b\n+c\n"
    stats = {
        "exit_status": "Submitted",
        "steps": 3,
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "elapsed": 75,
    }
    body = render(
        "pr_body.md",
        issue={"number": 9, "title": "T"},
        run=RUN,
        stats=stats,
        diffstat=diffstat(diff),
        summary="",
        checks=[],
        links={"run": None},
        draft_fallback=True,
    )
    assert body.startswith("Fixes #9") and "| `x.py` | 2 | 1 |" in body and "1m 15s" in body
    assert "opened as ready for review" in body and "/agent retry" in body


def test_pr_body_flags_dropped_tests_and_what_could_not_be_checked() -> None:
    stats = {"exit_status": "Submitted", "steps": 1, "prompt_tokens": 1, "completion_tokens": 1, "elapsed": 1}
    common: dict[str, Any] = {
        "issue": {"number": 9, "title": "T"},
        "run": RUN,
        "stats": stats,
        "diffstat": [],
        "summary": "",
        "checks": [],
        "links": {"run": None},
        "draft_fallback": False,
    }
    body = render(
        "pr_body.md",
        **common,
        dropped="drops existing tests: tests/test_ops.py::MulTest::test_mul",
        dropped_notes=["web/a.test.js: not checked for dropped tests (a language the App does not scan)"],
    )
    assert "> [!WARNING]\n> This change drops existing tests: tests/test_ops.py::MulTest::test_mul." in body
    assert "> [!NOTE]\n> - web/a.test.js: not checked for dropped tests (a language the App does not scan)." in body
    plain = render("pr_body.md", **common, dropped="", dropped_notes=[])
    assert "[!WARNING]" not in plain and "[!NOTE]" not in plain


def test_each_tool_call_of_a_reply_is_its_own_step_with_its_own_output() -> None:
    from tests.support.scripted_model import tool_reply
    from tests.unit.test_agent_toolcalls import run  # the loop's own tool-call messages

    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    agent, _, _ = run([tool_reply("echo first", "echo second", content=None), tool_reply(submit, content="Done.")])
    steps = steps_from_messages(agent.messages)
    assert [(s.command, s.output, s.returncode) for s in steps[:2]] == [
        ("echo first", "first\n", 0),
        ("echo second", "second\n", 0),
    ]
    assert steps[2].command == submit and steps[2].kind == "Submitted" and steps[2].thought == "Done."
