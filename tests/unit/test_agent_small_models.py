"""Defaults for small self-hosted models: the repeated-failure guard, replies cut at the cap, per-call timeouts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
import yaml

from bot.agent.config import DEFAULT_CONFIG_PATH, AgentConfig, ModelConfig, load_config
from bot.agent.errors import ModelTimeout
from bot.agent.loop import Agent
from bot.agent.model import LitellmModel
from bot.agent.model_base import ModelReply
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash

SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo done")
FAILING = "git commit -qm fix"
API_BASE = "http://127.0.0.1:8998/v1"


def run(replies: list[Any], agent: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], FakeSandbox]:
    sandbox = FakeSandbox()
    config = load_config(overrides={"agent": agent or {}})
    result = Agent(ScriptedModel(replies), sandbox, config).run("Fix the widget parser")
    return result.messages, sandbox


def test_a_command_that_failed_twice_in_a_row_is_refused_the_third_time() -> None:
    messages, sandbox = run([bash(FAILING)] * 3 + [bash("true"), SUBMIT])
    assert sandbox.commands.count(FAILING) == 2 and "true" in sandbox.commands
    refusal = messages[7]
    assert messages[6]["role"] == "assistant" and FAILING in messages[6]["content"]
    assert refusal["role"] == "user" and refusal["extra"]["interrupt_type"] == "RepeatedFailure"
    assert "just ran 2 times in a row with the same output (exit code 128)" in refusal["content"]
    assert messages[-1]["extra"]["exit_status"] == "Submitted"


def test_an_exit_0_that_repeats_the_same_output_is_refused_too() -> None:
    unclosed = "cat > notes.txt <<'EOF'\nhalf a file"  # bash only warns: exit 0, the same answer each time
    messages, sandbox = run([bash(unclosed)] * 4 + [SUBMIT])
    assert sandbox.commands.count(unclosed) == 2  # the third and fourth were refused
    refusals = [m for m in messages if m.get("extra", {}).get("interrupt_type") == "RepeatedFailure"]
    assert len(refusals) == 2 and "(exit code 0)" in refusals[0]["content"]


def test_re_running_the_tests_after_an_edit_is_never_refused() -> None:
    test, edit = "cat value.txt; false", "echo $RANDOM$RANDOM > value.txt"  # a test run that fails each time
    _, sandbox = run([bash(test), bash(edit), bash(test), bash(edit), bash(test), bash(test), SUBMIT])
    assert sandbox.commands.count(test) == 4  # another command between, or another output: a new streak


def test_the_same_command_with_a_new_output_each_time_is_never_refused() -> None:
    _, sandbox = run([bash("date +%N; false")] * 4 + [SUBMIT])
    assert sandbox.commands.count("date +%N; false") == 4


def test_the_guard_is_off_when_the_limit_is_zero_as_in_mini_swe_agent() -> None:
    _, sandbox = run([bash(FAILING)] * 4 + [SUBMIT], agent={"repeated_failure_limit": 0})
    assert sandbox.commands.count(FAILING) == 4


def test_the_guard_is_off_in_mini_swe_agents_own_config_layout(tmp_path: Path) -> None:
    path = tmp_path / "upstream-like.yaml"
    path.write_text(yaml.safe_dump({"agent": {"system_template": "s", "instance_template": "{{task}}"}}))
    assert load_config(path).agent.repeated_failure_limit == 0


def test_a_reply_cut_at_the_cap_without_a_command_gets_the_length_message() -> None:
    cut = ModelReply(
        "THOUGHT: I will look at the parser and then\n\n```mswea_bash_command\ngrep -n",
        100,
        1024,
        finish_reason="length",
    )
    messages, sandbox = run([cut, SUBMIT])
    error = messages[2]
    assert error["extra"]["interrupt_type"] == "FormatError" and error["extra"]["finish_reason"] == "length"
    assert "Cut off before the command block ended" in error["content"]
    assert sandbox.commands == ["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo done"]


def test_the_default_config_caps_replies_and_times_out_calls_within_the_run() -> None:
    config = load_config(DEFAULT_CONFIG_PATH)
    kwargs = config.model.model_kwargs
    assert 1024 <= kwargs["max_tokens"] <= 4096
    assert 0 < kwargs["timeout"] < config.agent.wall_time_limit_seconds


def test_the_default_prompt_shows_no_command_but_the_submission() -> None:
    config = load_config(DEFAULT_CONFIG_PATH)
    prompt = config.agent.system_template + config.agent.instance_template
    blocks = prompt.split("```mswea_bash_command\n")[1:]
    commands = [block.split("\n```")[0] for block in blocks]
    assert commands[0] == "<one bash command>"
    assert len(commands) == 2 and commands[1].startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


def test_a_call_that_times_out_is_not_retried(api: respx.MockRouter) -> None:
    route = api.post(f"{API_BASE}/chat/completions").mock(side_effect=httpx.ReadTimeout("model too slow"))
    model = LitellmModel(
        ModelConfig(
            model_name="hosted_vllm/served", api_base=API_BASE, model_kwargs={"timeout": 7}, retry_wait_seconds=0
        )
    )
    with pytest.raises(ModelTimeout):
        model.query([{"role": "user", "content": "hi"}])
    assert route.call_count == 1
    assert route.calls[0].request.extensions["timeout"]["read"] == 7
    assert "timeout" not in json.loads(route.calls[0].request.content)


def test_several_commands_in_one_reply_are_refused_with_a_short_count() -> None:
    plan = bash("ls") + "\n\n" + bash("cat calc.py") + "\n\n" + bash("sed -i s/a/b/ calc.py")
    messages, sandbox = run([plan, bash("ls"), SUBMIT], agent={"first_action_only": False})
    error = messages[2]
    assert error["extra"]["interrupt_type"] == "FormatError" and error["extra"]["n_actions"] == 3
    assert error["content"].strip() == "Nothing was run: you sent 3 commands. Send only the first one, alone."
    assert sandbox.commands[0] == "ls"


def test_the_default_task_lists_the_repositorys_files_when_given() -> None:
    config = load_config(DEFAULT_CONFIG_PATH)
    sandbox = FakeSandbox()
    files = "calc.py\ntests/test_calc.py"
    with_files = Agent(ScriptedModel([SUBMIT]), sandbox, config).run("Fix it", repo_files=files).messages[1]
    without = Agent(ScriptedModel([SUBMIT]), FakeSandbox(), config).run("Fix it").messages[1]
    assert f"<files>\n{files}\n</files>" in with_files["content"]
    assert "<files>" not in without["content"] and "Fix it" in without["content"]


def test_with_first_action_only_a_plan_runs_its_first_command_and_keeps_the_reply_to_there() -> None:
    plan = bash("cat calc.py", "THOUGHT: read it.") + "\n\n" + bash("sed -i s/-/+/ calc.py", "THOUGHT: fix it.")
    messages, sandbox = run([plan, SUBMIT], agent={"first_action_only": True})
    reply = messages[2]
    assert sandbox.commands[0] == "cat calc.py" and "sed -i s/-/+/ calc.py" not in sandbox.commands
    assert reply["role"] == "assistant" and reply["content"] == bash("cat calc.py", "THOUGHT: read it.")
    assert reply["extra"]["model_response"] == plan and reply["extra"]["actions"] == [{"command": "cat calc.py"}]
    assert messages[3]["role"] == "user" and messages[-1]["extra"]["exit_status"] == "Submitted"


def test_first_action_only_is_off_unless_configured_and_on_in_the_default_config() -> None:
    assert AgentConfig(system_template="s", instance_template="t").first_action_only is False
    assert load_config(DEFAULT_CONFIG_PATH).agent.first_action_only is True
