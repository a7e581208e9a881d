"""Trajectory files: mini-swe-agent's format, saved after every step, secrets redacted, read by upstream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.agent.config import load_config
from bot.agent.loop import Agent, AgentResult, StepEvent
from bot.trajectory import RunStats, TrajectoryWriter, load_trajectory, redact
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash

SECRET = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo done")


def run_agent(tmp_path: Path, replies: list[str], **writer: Any) -> tuple[AgentResult, list[dict[str, Any]]]:
    """Run with a trajectory writer; return the result and the file as read after every step."""
    path = tmp_path / "run" / "trajectory.json"
    snapshots: list[dict[str, Any]] = []

    def snapshot(event: StepEvent) -> None:
        snapshots.append(json.loads(path.read_text()))

    trajectory = TrajectoryWriter(path, **writer)
    agent = Agent(ScriptedModel(replies), FakeSandbox(), load_config(), trajectory=trajectory, on_step=snapshot)
    result = agent.run("Fix the bug")
    snapshots.append(json.loads(path.read_text()))
    return result, snapshots


def test_the_file_is_valid_after_every_step_with_the_current_exit_status(tmp_path: Path) -> None:
    result, snapshots = run_agent(tmp_path, [bash("echo one"), "no action", SUBMIT])
    assert [s["info"]["exit_status"] for s in snapshots] == ["", "", "Submitted", "Submitted"]
    assert [len(s["messages"]) for s in snapshots] == [4, 5, 7, 7]
    assert snapshots[-1]["messages"] == json.loads(json.dumps(result.messages))
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["trajectory.json"]  # no temporary files left


def test_the_format_is_mini_swe_agents_plus_our_block(tmp_path: Path) -> None:
    _, snapshots = run_agent(tmp_path, [bash("true"), SUBMIT], mini_fix={"run_id": "r1", "repo": "o/r", "issue": 7})
    data = snapshots[-1]
    assert data["trajectory_format"] == "mini-swe-agent-1.1"
    assert data["info"]["model_stats"] == {"instance_cost": 0.0, "api_calls": 2}
    assert data["info"]["submission"] == "done\n"
    assert set(data["info"]["config"]) == {
        "agent",
        "agent_type",
        "model",
        "model_type",
        "environment",
        "environment_type",
    }
    assert data["info"]["config"]["agent"]["step_limit"] == 50
    block = data["mini_fix"]
    assert (block["run_id"], block["repo"], block["issue"], block["steps"]) == ("r1", "o/r", 7, 2)
    assert (block["prompt_tokens"], block["completion_tokens"], block["total_tokens"]) == (200, 20, 220)
    assert block["started_at"] and block["finished_at"]
    assert snapshots[0]["mini_fix"]["finished_at"] is None


def test_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    replies = [bash(f"echo token={SECRET}"), SUBMIT]
    _, _ = run_agent(tmp_path, replies, secrets=[SECRET, ""], mini_fix={"note": f"x{SECRET}x", SECRET: 1})
    text = (tmp_path / "run" / "trajectory.json").read_text()
    assert SECRET not in text
    assert "token=***" in text and '"x***x"' in text


def test_redact_replaces_the_longest_secret_first() -> None:
    assert redact({"a": ["abc-long", ("abc",)]}, ["abc", "abc-long"]) == {"a": ["***", ["***"]]}


def test_load_trajectory_reads_what_save_wrote_and_rejects_other_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    TrajectoryWriter(path).save([{"role": "system", "content": "hi"}], config={}, stats=RunStats())
    assert load_trajectory(path)["messages"] == [{"role": "system", "content": "hi"}]
    path.write_text('{"not": "a trajectory"}')
    with pytest.raises(ValueError, match="not a trajectory"):
        load_trajectory(path)


def test_mini_swe_agents_inspector_reads_our_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mswea"))
    inspector = pytest.importorskip("minisweagent.run.utilities.inspector")
    result, _ = run_agent(tmp_path, [bash("echo one"), "no action", bash("ls"), SUBMIT])
    app = inspector.TrajectoryInspector([tmp_path / "run" / "trajectory.json"])
    assert len(app.messages) == len(result.messages)
    # The inspector pages on assistant messages: the opening messages, then one page per kept reply.
    assert len(app.steps) == 1 + sum(m["role"] == "assistant" for m in result.messages)


def test_secrets_that_json_escapes_are_redacted_too(tmp_path: Path) -> None:
    secret = 'pa"ss\\wörd\n42'
    path = tmp_path / "t.json"
    messages = [{"role": "user", "content": f"before {secret} after", "extra": {secret: [secret]}}]
    TrajectoryWriter(path, secrets=[secret]).save(messages, config={"api_key": secret}, stats=RunStats())
    data = load_trajectory(path)
    assert data["messages"] == [{"role": "user", "content": "before *** after", "extra": {"***": ["***"]}}]
    assert data["info"]["config"] == {"api_key": "***"}
