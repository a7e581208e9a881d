"""Same config file, same server replies: the HTTP requests mini-fix sends are mini-swe-agent 2.4.6's, byte for byte.

Both agents talk to a scripted OpenAI-compatible server through litellm: upstream's DefaultAgent with its own
LitellmModel (tool calls, `mini.yaml`) or LitellmTextbasedModel (`mini_textbased.yaml`), and ours as `mini-fix run
--config FILE` builds it. The request bodies each server recorded are compared whole.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from bot.agent.loop import Agent
from bot.agent.model import LitellmModel
from bot.cli.local_run import LocalRunRequest
from bot.pipeline.local import run_config
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from tests.support.fake_sandbox import FakeSandbox
from tests.support.model_server import ScriptedModelServer, bash_reply, tool_call_reply
from tests.unit.test_agent_upstream import SCRIPTED, SUBMIT, UpstreamEnvironment

TASK = "Fix the widget parser"
SUBMIT_COMMAND = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && printf 'changed x\\nverified y\\n'"
BAD_ARGUMENTS = {"id": "call_9", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls'}}
UNKNOWN_TOOL = {"id": "call_8", "type": "function", "function": {"name": "python", "arguments": '{"code": "1"}'}}

TEXT_STORY: list[Any] = [
    bash_reply("echo hello && ls /nonexistent-dir"),
    "Let me think about it without acting.",
    bash_reply("echo one") + "\nand also\n" + bash_reply("echo two"),  # upstream: a format error, nothing run
    bash_reply("sleep 500"),
    {"content": "THOUGHT: I will", "finish_reason": "length"},
    bash_reply("cat huge.log"),
    SUBMIT,
]
TOOL_STORY: list[Any] = [
    tool_call_reply("echo hello && ls /nonexistent-dir", content="Let me look around first."),
    {"content": "I think the parser is wrong, but I will not call a tool."},
    tool_call_reply("echo one", "echo two"),  # call-only (content null) and two calls: both run, in order
    {"content": None, "tool_calls": [BAD_ARGUMENTS]},
    {"content": "Trying python.", "tool_calls": [UNKNOWN_TOOL]},
    tool_call_reply("sleep 500", reasoning_content="The build may hang; try it anyway."),
    {"content": "", "reasoning_content": "Let me think step by step about", "finish_reason": "length"},
    tool_call_reply("cat huge.log", content="Read the log."),
    tool_call_reply(SUBMIT_COMMAND, content="Done."),
]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """mini-swe-agent's agent and its two litellm models, imported quietly, cost errors ignored (no price here)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MSWEA_SILENT_STARTUP", "1")
        mp.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path_factory.mktemp("mswea")))
        mp.setenv("MSWEA_COST_TRACKING", "ignore_errors")
        names = ("agents.default", "models.litellm_model", "models.litellm_textbased_model", "environments.local")
        modules = {name: importlib.import_module(f"minisweagent.{name}") for name in names}
        yield SimpleNamespace(
            DefaultAgent=modules["agents.default"].DefaultAgent,
            LitellmModel=modules["models.litellm_model"].LitellmModel,
            LitellmTextbasedModel=modules["models.litellm_textbased_model"].LitellmTextbasedModel,
            LocalEnvironment=modules["environments.local"].LocalEnvironment,
        )


def upstream_config(name: str) -> Path:
    spec = importlib.util.find_spec("minisweagent")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "config" / name


def run_upstream(up: SimpleNamespace, path: Path, story: list[Any], tool_calls: bool) -> list[dict[str, Any]]:
    raw = yaml.safe_load(path.read_text())
    with ScriptedModelServer(story) as server:
        model_section = raw["model"] | {"model_name": "hosted_vllm/scripted", "cost_tracking": "ignore_errors"}
        model_section["model_kwargs"] = model_section.get("model_kwargs", {}) | {"api_base": server.api_base}
        model = (up.LitellmModel if tool_calls else up.LitellmTextbasedModel)(**model_section)
        env = UpstreamEnvironment(up, FakeSandbox(results=SCRIPTED), raw.get("environment", {}))
        agent = up.DefaultAgent(model, env, **{**raw["agent"], "mode": "yolo"})
        agent.run(TASK)
        assert agent.messages[-1]["extra"]["exit_status"] == "Submitted"
        return server.requests


def run_ours(path: Path, story: list[Any], tmp_path: Path) -> tuple[list[dict[str, Any]], Agent]:
    with ScriptedModelServer(story) as server:
        request = LocalRunRequest(
            repo=tmp_path,
            task=TASK,
            config=[str(path), "model.model_name=hosted_vllm/scripted", f"model.api_base={server.api_base}"],
        )
        resolved = run_config(request.flags(), RepoConfig(), Settings(data_dir=tmp_path, _env_file=None))
        agent = Agent(LitellmModel(resolved.model), FakeSandbox(results=SCRIPTED), resolved.agent)
        agent.run(TASK)
        return server.requests, agent


def test_mini_textbased_yaml_sends_upstreams_requests(upstream: SimpleNamespace, tmp_path: Path) -> None:
    path = upstream_config("mini_textbased.yaml")
    theirs = run_upstream(upstream, path, TEXT_STORY, tool_calls=False)
    ours, agent = run_ours(path, TEXT_STORY, tmp_path)
    assert len(ours) == len(TEXT_STORY)
    assert ours == theirs
    assert "tools" not in ours[0]
    # The two-action reply got upstream's format error, not a run of its first block (our first_action_only).
    assert "found 2 actions" in ours[3]["messages"][-1]["content"]
    assert agent.result().exit_status == "Submitted"


def test_mini_yaml_sends_upstreams_requests(upstream: SimpleNamespace, tmp_path: Path) -> None:
    path = upstream_config("mini.yaml")
    theirs = run_upstream(upstream, path, TOOL_STORY, tool_calls=True)
    ours, agent = run_ours(path, TOOL_STORY, tmp_path)
    assert len(ours) == len(TOOL_STORY)
    assert [json.dumps(b, sort_keys=True) for b in ours] == [json.dumps(b, sort_keys=True) for b in theirs]
    assert ours[0]["tools"][0]["function"]["name"] == "bash"
    assert set(ours[0]) == set(theirs[0])
    assert agent.result().exit_status == "Submitted"


def test_tool_calls_run_in_order_and_answer_as_tool_messages(tmp_path: Path) -> None:
    ours, agent = run_ours(upstream_config("mini.yaml"), TOOL_STORY, tmp_path)
    after_two_calls = ours[3]["messages"]
    call_only, first, second = after_two_calls[-3:]
    assert "content" not in call_only  # a call-only reply is sent back without content, as the server sent it
    assert [c["function"]["arguments"] for c in call_only["tool_calls"]] == [
        json.dumps({"command": "echo one"}),
        json.dumps({"command": "echo two"}),
    ]
    assert (first["role"], first["tool_call_id"], second["tool_call_id"]) == ("tool", "call_0", "call_1")
    assert '"output": "one\\n"' in first["content"] and '"output": "two\\n"' in second["content"]
    # The reply without a call is not in the history; upstream's "no tool calls" text answered it.
    assert after_two_calls[-4]["role"] == "user" and "No tool calls found" in after_two_calls[-4]["content"]
    errors = [m["content"] for m in ours[5]["messages"][-2:]]
    assert "Error parsing tool call arguments" in errors[0] and "Unknown tool 'python'" in errors[1]
    # A reply cut off (length) gets upstream's cut-off text, and its reasoning goes back to the server.
    assert "reached the output token limit (finish_reason=length)" in ours[7]["messages"][-1]["content"]
    assert ours[6]["messages"][-2]["reasoning_content"] == "The build may hang; try it anyway."
    kept = [m for m in agent.messages if m.get("reasoning_content")]
    assert kept[0]["extra"]["reasoning_content"] == "The build may hang; try it anyway."
