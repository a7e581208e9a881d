"""Same config, same replies: our message list is the one mini-swe-agent 2.4.6's DefaultAgent produces."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import yaml

from bot.agent.config import ACTION_REGEX, DEFAULT_CONFIG_PATH, load_config
from bot.agent.loop import Agent
from sandbox.base import ExecResult
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash

SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && printf 'changed x\\nverified y\\n'")
SCRIPTED = {
    "sleep 500": ExecResult("started\n", -1, "The command timed out after 120 seconds and was killed."),
    "cat huge.log": ExecResult("h" * 6000 + "m" * 9000 + "t" * 6000, 0),
}
STORY = [
    bash("echo hello && ls /nonexistent-dir"),
    "Let me think about it without acting.",
    bash("echo one") + "\nand also\n" + bash("echo two"),
    bash("sleep 500"),
    bash("cat huge.log"),
    bash("printf 'x\\n' && exit 3", thought="THOUGHT: check the exit code."),
    SUBMIT,
]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """mini-swe-agent's agent, text-action helpers and local environment, imported quietly."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MSWEA_SILENT_STARTUP", "1")
        mp.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path_factory.mktemp("mswea")))
        modules: dict[str, ModuleType] = {
            name: importlib.import_module(f"minisweagent.{name}")
            for name in ("agents.default", "models.utils.actions_text", "environments.local")
        }
        yield SimpleNamespace(
            DefaultAgent=modules["agents.default"].DefaultAgent,
            actions=modules["models.utils.actions_text"],
            LocalEnvironment=modules["environments.local"].LocalEnvironment,
        )


class UpstreamTextModel:
    """mini-swe-agent's text-based model minus the HTTP call: its own parsing and observation formatting."""

    def __init__(self, up: SimpleNamespace, replies: list[str], model_section: dict[str, Any]) -> None:
        self.up, self.replies = up, list(replies)
        self.config = SimpleNamespace(**model_section)
        self.section = model_section

    def query(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        content = self.replies.pop(0)
        actions = self.up.actions.parse_regex_actions(
            content,
            action_regex=self.section.get("action_regex", ACTION_REGEX),
            format_error_template=self.section["format_error_template"],
            template_kwargs={"finish_reason": "stop"},
        )
        return {"role": "assistant", "content": content, "extra": {"actions": actions, "cost": 0.0}}

    def format_message(self, **kwargs: Any) -> dict[str, Any]:
        return kwargs

    def format_observation_messages(
        self,
        message: dict[str, Any],
        outputs: list[dict[str, Any]],
        template_vars: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        return list(
            self.up.actions.format_observation_messages(
                outputs,
                observation_template=self.section["observation_template"],
                template_vars=template_vars,
            )
        )

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return dict(self.section)

    def serialize(self) -> dict[str, Any]:
        return {}


class UpstreamEnvironment:
    """Runs actions in our FakeSandbox, then applies mini-swe-agent's own submission check."""

    def __init__(self, up: SimpleNamespace, sandbox: FakeSandbox, section: dict[str, Any]) -> None:
        self.up, self.sandbox, self.section = up, sandbox, section
        self.config = SimpleNamespace(**section)

    def execute(self, action: dict[str, Any], cwd: str = "") -> dict[str, Any]:
        output = self.sandbox.execute(action["command"]).as_dict()
        self.up.LocalEnvironment._check_finished(self, output)
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {"cwd": "/testbed", "env": {}, "timeout": 120, **self.section, **self.sandbox.template_vars()}

    def serialize(self) -> dict[str, Any]:
        return {}


def upstream_config_files() -> list[Path]:
    spec = importlib.util.find_spec("minisweagent")
    assert spec is not None and spec.origin is not None
    return [Path(spec.origin).parent / "config" / "mini_textbased.yaml", DEFAULT_CONFIG_PATH]


def run_both(
    up: SimpleNamespace, path: Path, replies: list[str], agent_overrides: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    raw = yaml.safe_load(path.read_text())
    agent_section = {**raw["agent"], "mode": "yolo", **(agent_overrides or {})}
    theirs = up.DefaultAgent(
        UpstreamTextModel(up, replies, raw["model"]),
        UpstreamEnvironment(up, FakeSandbox(results=SCRIPTED), raw.get("environment", {})),
        **agent_section,
    )
    theirs.run("Fix the widget parser")
    config = load_config(path, overrides={"agent": agent_overrides or {}})
    ours = Agent(ScriptedModel(replies), FakeSandbox(results=SCRIPTED), config)
    ours.run("Fix the widget parser")
    return theirs.messages, ours.messages


def role_content(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


@pytest.mark.parametrize("path", upstream_config_files(), ids=lambda p: p.name)
def test_same_replies_same_messages(upstream: SimpleNamespace, path: Path) -> None:
    # first_action_only (on in prompts/agent.yaml only) runs the first of several blocks where upstream refuses all.
    theirs, ours = run_both(upstream, path, STORY, {"cost_limit": 0, "first_action_only": False})
    assert role_content(ours) == role_content(theirs)
    assert ours[-1]["extra"]["exit_status"] == theirs[-1]["extra"]["exit_status"] == "Submitted"
    assert ours[-1]["extra"]["submission"] == theirs[-1]["extra"]["submission"] == "changed x\nverified y\n"


@pytest.mark.parametrize("path", upstream_config_files(), ids=lambda p: p.name)
def test_same_messages_when_format_errors_end_the_run(upstream: SimpleNamespace, path: Path) -> None:
    theirs, ours = run_both(upstream, path, [bash("true"), "a", "b", "c"], {"max_consecutive_format_errors": 3})
    assert role_content(ours) == role_content(theirs)
    assert ours[-1]["extra"]["exit_status"] == "RepeatedFormatError"


def test_same_messages_when_the_step_limit_ends_the_run(upstream: SimpleNamespace) -> None:
    path = upstream_config_files()[0]
    theirs, ours = run_both(upstream, path, [bash("true")] * 4, {"step_limit": 2})
    assert role_content(ours) == role_content(theirs)
    assert ours[-1]["extra"]["exit_status"] == "LimitsExceeded"
