"""The loop with a tool-call config and reasoning replies: calls run in order, reasoning kept and counted."""

from __future__ import annotations

from typing import Any

from bot.agent.config import DEFAULT_CONFIG_PATH, load_specs
from bot.agent.loop import Agent
from bot.agent.model_base import ModelReply
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import Script, ScriptedModel, bash, tool_reply

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo 'fixed it'"


def run(replies: list[Script], *specs: str) -> tuple[Agent, ScriptedModel, FakeSandbox]:
    model, sandbox = ScriptedModel(replies), FakeSandbox()
    agent = Agent(model, sandbox, load_specs([str(DEFAULT_CONFIG_PATH), "model.model_class=litellm", *specs]))
    agent.run("Fix the parser")
    return agent, model, sandbox


def test_every_call_runs_in_order_and_a_submission_stops_the_rest() -> None:
    agent, _, sandbox = run([tool_reply("echo a", "echo b"), tool_reply(SUBMIT, "echo never")])
    assert sandbox.commands == ["echo a", "echo b", SUBMIT]
    tools = [m for m in agent.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["call_0", "call_1"]
    assert agent.result().exit_status == "Submitted" and agent.result().submission == "fixed it\n"


def test_the_repeated_failure_guard_answers_the_call_it_refuses() -> None:
    agent, _, sandbox = run([tool_reply("false")] * 3 + [tool_reply(SUBMIT)], "agent.repeated_failure_limit=2")
    assert sandbox.commands.count("false") == 2
    refused = [m for m in agent.messages if m["role"] == "tool"][2]
    assert refused["tool_call_id"] == "call_0" and "just ran 2 times in a row" in refused["content"]


def test_a_text_reply_to_a_tool_config_is_a_format_error_and_not_kept() -> None:
    replies: list[Script] = [ModelReply("Just thinking.", finish_reason="stop"), tool_reply(SUBMIT)]
    agent, model, _ = run(replies, "model.format_error_template={{error}}")
    assert [m["role"] for m in model.requests[1][2:]] == ["user"]
    assert "No tool calls found" in model.requests[1][-1]["content"]
    assert agent.result().exit_status == "Submitted"


def reasoning(content: str, finish_reason: str, **extra: Any) -> ModelReply:
    return ModelReply(content, 100, 50, finish_reason=finish_reason, reasoning_content="Hmm, the parser", **extra)


def test_a_text_reply_cut_off_while_reasoning_says_so() -> None:
    model, sandbox = ScriptedModel([reasoning("", "length"), bash(SUBMIT)]), FakeSandbox()
    agent = Agent(model, sandbox, load_specs([str(DEFAULT_CONFIG_PATH)]))
    agent.run("Fix the parser")
    assert "Cut off while still reasoning" in model.requests[1][-1]["content"]
    assert agent.messages[2]["extra"]["reasoning_content"] == "Hmm, the parser"


def test_a_reply_cut_off_after_its_reasoning_is_the_usual_cut_off() -> None:
    model = ScriptedModel([reasoning("THOUGHT: I will", "length"), bash(SUBMIT)])
    Agent(model, FakeSandbox(), load_specs([str(DEFAULT_CONFIG_PATH)])).run("Fix the parser")
    assert "Cut off before the command block ended" in model.requests[1][-1]["content"]


def test_reasoning_is_kept_in_extra_and_its_tokens_count_against_the_limit() -> None:
    heavy = ModelReply("", 100, 900, finish_reason="tool_calls", reasoning_content="Long thought", reasoning_tokens=850)
    call = tool_reply("echo a")
    heavy = ModelReply(**{**heavy.__dict__, "tool_calls": call.tool_calls, "message": call.message})
    agent, model, _ = run([heavy, tool_reply("echo b")], "agent.token_limit=1000")
    assert len(model.requests) == 1  # 100 + 900 tokens: the budget is spent before a second call
    assert agent.result().exit_status == "TokenLimitExceeded"
    kept = agent.messages[2]["extra"]
    assert kept["reasoning_content"] == "Long thought"
    assert kept["usage"]["completion_tokens_details"] == {"reasoning_tokens": 850}


def test_first_action_only_cuts_the_message_the_server_sent_too() -> None:
    content = bash("echo one") + "\n" + bash("echo two")
    sent = {"role": "assistant", "content": content, "reasoning_content": "Two commands"}
    model = ScriptedModel([ModelReply(content, finish_reason="stop", message=sent), bash(SUBMIT)])
    agent = Agent(model, FakeSandbox(), load_specs([str(DEFAULT_CONFIG_PATH)]))
    agent.run("Fix the parser")
    assert model.requests[1][2] == {
        "role": "assistant",
        "content": bash("echo one"),
        "reasoning_content": "Two commands",
    }
    assert agent.messages[2]["extra"]["model_response"] == content


def test_a_reply_without_a_usable_call_is_kept_in_the_format_errors_extra() -> None:
    said = ModelReply(
        "I would run ls.", finish_reason="stop", message={"role": "assistant", "content": "I would run ls."}
    )
    agent, _, _ = run([said, tool_reply(SUBMIT)], "model.format_error_template={{error}}")
    error = next(m for m in agent.messages if m.get("extra", {}).get("interrupt_type") == "FormatError")
    assert error["extra"]["model_response"] == {"role": "assistant", "content": "I would run ls."}
