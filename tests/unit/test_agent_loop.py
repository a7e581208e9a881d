"""The agent loop with a scripted model and a host-bash sandbox: steps, format errors, budgets, submission."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from bot.agent.config import load_config
from bot.agent.errors import ContextWindowExceeded, ModelUnavailable
from bot.agent.loop import Agent, StepEvent
from sandbox.base import ExecResult
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import Script, ScriptedModel, bash

SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo 'fixed the parser'")


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_agent(
    replies: Sequence[Script],
    *,
    sandbox: FakeSandbox | None = None,
    agent: dict[str, Any] | None = None,
    model_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> tuple[Agent, ScriptedModel, FakeSandbox]:
    model = ScriptedModel(replies, **(model_kwargs or {}))
    sandbox = sandbox or FakeSandbox()
    config = load_config(overrides={"agent": agent or {}})
    return Agent(model, sandbox, config, **kwargs), model, sandbox


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def test_a_step_runs_the_command_and_reports_its_output() -> None:
    agent, model, sandbox = make_agent([bash("echo hello; exit 3"), SUBMIT])
    result = agent.run("Fix the parser")
    assert sandbox.commands[0] == "echo hello; exit 3"
    observation = result.messages[3]
    assert observation["role"] == "user"
    assert "<returncode>3</returncode>" in observation["content"] and "hello" in observation["content"]
    assert observation["extra"]["raw_output"] == "hello\n"
    assert "Fix the parser" in model.requests[0][1]["content"]


def test_submission_ends_the_run_without_an_observation() -> None:
    agent, _, _ = make_agent([SUBMIT])
    result = agent.run("task")
    assert roles(result.messages) == ["system", "user", "assistant", "exit"]
    assert (result.exit_status, result.submission, result.steps) == ("Submitted", "fixed the parser\n", 1)
    assert result.messages[-1]["extra"] == {"exit_status": "Submitted", "submission": "fixed the parser\n"}


def test_every_request_is_the_previous_one_plus_what_happened_since() -> None:
    replies = [bash("echo a"), "I will think first.", bash("false"), SUBMIT]
    agent, model, _ = make_agent(replies)
    agent.run("task")
    first, second, third, fourth = model.requests
    assert second[: len(first)] == first and second[len(first) :] == [
        {"role": "assistant", "content": replies[0]},
        {"role": "user", "content": second[-1]["content"]},
    ]
    assert third[: len(second)] == second and len(third) == len(second) + 1  # format error: message only
    assert third[-1]["role"] == "user" and "no mswea_bash_command block" in third[-1]["content"]
    assert fourth[: len(third)] == third and fourth[len(third)]["content"] == replies[2]
    assert len(fourth) == len(third) + 2


@pytest.mark.parametrize(("reply", "found"), [("no block at all", 0), (bash("ls") + "\n" + bash("pwd"), 2)])
def test_zero_or_two_actions_get_a_format_error_and_the_reply_is_not_kept(reply: str, found: int) -> None:
    agent, _, sandbox = make_agent([reply, SUBMIT], agent={"first_action_only": False})
    result = agent.run("task")
    error = result.messages[2]
    assert (error["role"], error["extra"]["interrupt_type"], error["extra"]["n_actions"]) == (
        "user",
        "FormatError",
        found,
    )
    assert (f"you sent {found} commands" if found else "no mswea_bash_command block") in error["content"]
    assert error["extra"]["model_response"] == reply
    assert reply not in [m["content"] for m in result.messages]
    assert sandbox.commands == ["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo 'fixed the parser'"]
    assert result.steps == 2


def test_repeated_format_errors_end_the_run() -> None:
    agent, _, _ = make_agent(["nothing"] * 5, agent={"max_consecutive_format_errors": 3})
    result = agent.run("task")
    assert (result.exit_status, result.steps) == ("RepeatedFormatError", 3)


def test_a_clean_step_resets_the_format_error_count() -> None:
    agent, _, _ = make_agent(["x", "x", bash("true"), "x", "x", SUBMIT], agent={"max_consecutive_format_errors": 3})
    assert agent.run("task").exit_status == "Submitted"


def test_a_timeout_is_an_observation_and_the_run_goes_on() -> None:
    timed_out = ExecResult("partial output\n", -1, "The command timed out after 120 seconds and was killed.")
    sandbox = FakeSandbox(results={"sleep 1000": timed_out})
    agent, _, _ = make_agent([bash("sleep 1000"), SUBMIT], sandbox=sandbox)
    result = agent.run("task")
    observation = result.messages[3]["content"]
    assert "<exception>The command timed out after 120 seconds and was killed.</exception>" in observation
    assert "partial output" in observation and "<returncode>-1</returncode>" in observation
    assert result.exit_status == "Submitted"


def test_step_limit_counts_model_calls() -> None:
    agent, model, _ = make_agent([bash("true")] * 5, agent={"step_limit": 2})
    result = agent.run("task")
    assert (result.exit_status, result.steps, len(model.requests)) == ("LimitsExceeded", 2, 2)


def test_cost_limit() -> None:
    agent, _, _ = make_agent([bash("true")] * 5, agent={"cost_limit": 1.0}, model_kwargs={"cost": 0.6})
    result = agent.run("task")
    assert (result.exit_status, result.steps) == ("LimitsExceeded", 2)
    assert result.cost == pytest.approx(1.2)


def test_wall_time_limit_uses_the_injected_clock() -> None:
    clock = FakeClock()

    def advance(event: StepEvent) -> None:
        clock.now += 400

    agent, _, _ = make_agent([bash("true")] * 5, agent={"wall_time_limit_seconds": 1000}, clock=clock, on_step=advance)
    result = agent.run("task")
    assert (result.exit_status, result.steps, result.elapsed_seconds) == ("TimeExceeded", 3, 1200)


def test_token_limit_has_its_own_exit_status() -> None:
    agent, _, _ = make_agent(
        [bash("true")] * 5,
        agent={"token_limit": 250},
        model_kwargs={"prompt_tokens": 100, "completion_tokens": 10},
    )
    result = agent.run("task")
    assert (result.exit_status, result.steps) == ("TokenLimitExceeded", 3)
    assert (result.prompt_tokens, result.completion_tokens) == (300, 30)


def test_zero_limits_mean_no_limit() -> None:
    off = {"step_limit": 0, "cost_limit": 0, "wall_time_limit_seconds": 0, "token_limit": 0}
    agent, _, _ = make_agent([bash("true")] * 60 + [SUBMIT], agent=off, model_kwargs={"cost": 5.0})
    assert agent.run("task").steps == 61


def test_cancel_stops_before_the_next_model_call() -> None:
    cancel = threading.Event()
    agent, model, _ = make_agent([bash("true")] * 3, cancel=cancel, on_step=lambda event: cancel.set())
    result = agent.run("task")
    assert (result.exit_status, result.steps, len(model.requests)) == ("Cancelled", 1, 1)


def test_on_step_reports_each_model_call() -> None:
    events: list[StepEvent] = []
    agent, _, _ = make_agent([bash("exit 4"), "oops", SUBMIT], on_step=events.append)
    agent.run("task")
    assert [(e.step, e.command, e.returncode, e.format_error) for e in events] == [
        (1, "exit 4", 4, False),
        (2, None, None, True),
        (3, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo 'fixed the parser'", 0, False),
    ]
    assert (events[-1].step_limit, events[-1].prompt_tokens, events[-1].completion_tokens) == (50, 300, 30)


@pytest.mark.parametrize(
    ("command", "submitted"),
    [
        ("echo first && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", False),  # marker on line 2
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && false", False),  # non-zero return code
        ("printf '\\n  \\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT  \\nsummary\\n'", True),  # blank lines first
    ],
)
def test_submission_edge_cases(command: str, submitted: bool) -> None:
    agent, _, _ = make_agent([bash(command), "stop"], agent={"max_consecutive_format_errors": 1})
    result = agent.run("task")
    assert result.exit_status == ("Submitted" if submitted else "RepeatedFormatError")
    if submitted:
        assert result.submission == "summary\n"


def test_long_outputs_are_cut_in_the_middle() -> None:
    output = "a" * 3000 + "b" * 20000 + "c" * 3000
    sandbox = FakeSandbox(results={"cat big.log": ExecResult(output, 0)})
    agent, _, _ = make_agent([bash("cat big.log"), SUBMIT], sandbox=sandbox)
    observation = agent.run("task").messages[3]
    assert "16000 characters elided" in observation["content"]
    assert observation["content"].count("b") < 4100 and observation["content"].count("c") >= 3000
    assert len(observation["content"]) < 11000
    assert observation["extra"]["raw_output"] == output


def test_short_outputs_are_kept_whole() -> None:
    output = "x" * 9999
    sandbox = FakeSandbox(results={"cat ok.log": ExecResult(output, 0)})
    agent, _, _ = make_agent([bash("cat ok.log"), SUBMIT], sandbox=sandbox)
    assert f"<output>\n{output}</output>" in agent.run("task").messages[3]["content"]


@pytest.mark.parametrize(
    "error", [ContextWindowExceeded("prompt too long"), ModelUnavailable("http://vllm:8000/v1 down")]
)
def test_model_errors_end_the_run_with_their_name(error: Exception) -> None:
    agent, _, _ = make_agent([bash("true"), error])
    result = agent.run("task")
    assert result.exit_status == type(error).__name__
    assert result.messages[-1]["content"] == str(error)


def test_an_unexpected_error_is_recorded_then_raised() -> None:
    agent, _, _ = make_agent([RuntimeError("sandbox vanished")])
    with pytest.raises(RuntimeError, match="sandbox vanished"):
        agent.run("task")
    last = agent.messages[-1]
    assert last["extra"]["exit_status"] == "RuntimeError" and "Traceback" in last["extra"]["traceback"]


def test_extra_template_variables_reach_the_prompts() -> None:
    config = load_config(overrides={"agent": {"instance_template": "{{task}} in {{repo}} on {{system}}"}})
    agent = Agent(ScriptedModel([SUBMIT]), FakeSandbox(), config)
    assert agent.run("Fix it", repo="octo/widgets").messages[1]["content"] == "Fix it in octo/widgets on Linux"


def test_a_missing_template_variable_is_an_error() -> None:
    config = load_config(overrides={"agent": {"instance_template": "{{task}} {{nonexistent}}"}})
    with pytest.raises(Exception, match="nonexistent"):
        Agent(ScriptedModel([SUBMIT]), FakeSandbox(), config).run("task")


def test_legacy_timeout_template_renders_timeouts() -> None:
    timed_out = ExecResult("half", -1, "timed out")
    config = load_config(overrides={"agent": {"timeout_template": "KILLED {{action.action}}: {{output}}"}})
    agent = Agent(ScriptedModel([bash("sleep 9"), SUBMIT]), FakeSandbox(results={"sleep 9": timed_out}), config)
    assert agent.run("task").messages[3]["content"] == "KILLED sleep 9: half"
