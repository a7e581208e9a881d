"""`mini-fix run` with a real model through the production litellm path, in the real Docker sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.agent.config import DEFAULT_CONFIG_PATH
from bot.pipeline.attempts.exits import EXITS
from tests.realmodel.conftest import TIER_CONFIG, RealModel
from tests.support.buggy_repos import CALC, build

pytestmark = [pytest.mark.docker, pytest.mark.realmodel]

# How a run may end here: submitted, or one of the budget / format statuses with a hint. Not a crash.
CLEAN_ENDINGS = {"Submitted"} | set(EXITS) - {
    "ModelUnavailable",
    "ModelNotFound",
    "ModelAuthError",
    "ModelBadRequest",
    "Cancelled",
}


def mini_fix_run(repo: Path, out: Path, model: RealModel, overlay: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINIFIX_DATA_DIR": str(out.parent / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    cmd = [
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        "--repo",
        str(repo),
        "--task",
        CALC.issue,
        "--model",
        model.litellm_name,
        "--api-base",
        model.api_base,
        "--config",
        str(DEFAULT_CONFIG_PATH),
        "--config",
        str(overlay),
        "--output",
        str(out),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)


def replies(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every model reply's bookkeeping: assistant messages and the format errors that replaced a reply."""
    return [
        m["extra"]
        for m in messages
        if m["role"] == "assistant" or m.get("extra", {}).get("interrupt_type") == "FormatError"
    ]


def test_mini_fix_run_with_the_real_model(
    real_model: RealModel, tier_overlay: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = build(CALC, tmp_path / "calc")
    out = tmp_path / "out"
    result = mini_fix_run(repo, out, real_model, tier_overlay)
    log = result.stdout + result.stderr
    data = json.loads((out / "trajectory.json").read_text())
    status, messages = data["info"]["exit_status"], data["messages"]
    # A clear ending, the exit code that goes with it, and a progress line per model call.
    assert status in CLEAN_ENDINGS, log
    assert (result.returncode == 0) == (status == "Submitted"), log
    assert f"{status}:" in result.stdout and "step 1/" in result.stdout, log
    # Real usage from the server, counted per reply and in total; the history only grows.
    calls = replies(messages)
    assert data["info"]["model_stats"]["api_calls"] == len(calls) == data["mini_fix"]["steps"]
    assert 1 <= len(calls) <= TIER_CONFIG["agent"]["step_limit"]
    prompts = [c["usage"]["prompt_tokens"] for c in calls]
    assert all(p > 100 for p in prompts) and prompts == sorted(prompts), prompts
    assert all(0 < c["usage"]["completion_tokens"] <= 192 for c in calls)
    assert data["mini_fix"]["prompt_tokens"] == sum(prompts)
    assert data["mini_fix"]["completion_tokens"] == sum(c["usage"]["completion_tokens"] for c in calls)
    assert data["info"]["model_stats"]["instance_cost"] == 0.0  # unpriced local model: no cost, no error
    # Real replies parsed and their actions executed in the sandbox (observations carry real return codes).
    ran = [m for m in messages if m["role"] == "user" and "returncode" in m.get("extra", {})]
    actions = [m for m in messages if m["role"] == "assistant"]
    assert actions, f"no reply held a command: {[c.get('finish_reason') for c in calls]}\n{log}"
    assert all(len(m["extra"]["actions"]) == 1 for m in actions)
    assert len(ran) >= len(actions) - 1  # the last action may be the submission (no observation)
    assert all(f"<returncode>{m['extra']['returncode']}</returncode>" in m["content"] for m in ran)
    assert {c["finish_reason"] for c in calls} <= {"stop", "length"}
    # mini-swe-agent's own inspector reads the file.
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mswea"))
    from minisweagent.run.utilities.inspector import TrajectoryInspector

    inspector = TrajectoryInspector([out / "trajectory.json"])
    assert len(inspector.messages) == len(messages)
    assert len(inspector.steps) == 1 + len(actions)
    # The host checkout is untouched; the patch file exists (empty when nothing changed).
    assert (
        subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    )
    assert (out / "patch.diff").exists()
