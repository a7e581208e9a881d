"""`mini-fix run` end to end: a real sandbox, a scripted model over real HTTP, a real repository with a bug."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.agent.config import DEFAULT_CONFIG_PATH
from tests.support.model_server import ScriptedModelServer, bash_reply, tool_call_reply

# --config replaces our default (mini-swe-agent's -c), so an overlay file is layered on it by naming both.
OUR_CONFIG = ("--config", str(DEFAULT_CONFIG_PATH))

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

CALC = "def add(a, b):\n    return a - b\n"
TEST = (
    "import unittest\nfrom calc import add\n\n\n"
    "class AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\n"
    "if __name__ == '__main__':\n    unittest.main()\n"
)
FIX_REPLIES = [
    bash_reply("cat calc.py && python3 -m unittest -q 2>&1 | tail -3", "Look at the code and reproduce."),
    bash_reply("sed -i 's/a - b/a + b/' calc.py && python3 -m unittest -q", "add subtracts; fix it and rerun."),
    bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nadd() now adds; test_add passes.\\n'", "Done; submit."),
]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def buggy_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "calc"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init")
    return repo


def _mini_fix_run(repo: Path, out: Path, api_base: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINIFIX_DATA_DIR": str(out.parent / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    cmd = [
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        "--repo",
        str(repo),
        "--task",
        "add(2, 3) returns -1",
        "--model",
        "hosted_vllm/scripted",
        "--api-base",
        api_base,
        "--output",
        str(out),
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def test_run_fixes_the_bug_and_the_patch_applies(buggy_repo: Path, tmp_path: Path) -> None:
    before = _git(buggy_repo, "status", "--porcelain") + (buggy_repo / "calc.py").read_text()
    out = tmp_path / "out"
    with ScriptedModelServer(FIX_REPLIES) as model:
        result = _mini_fix_run(buggy_repo, out, model.api_base)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "step 2" in result.stdout and "Submitted" in result.stdout
    # The host checkout is untouched; the patch applies on it and fixes the test.
    assert _git(buggy_repo, "status", "--porcelain") + (buggy_repo / "calc.py").read_text() == before
    patch = (out / "patch.diff").read_text()
    assert "+    return a + b" in patch
    _git(buggy_repo, "apply", str(out / "patch.diff"))
    tests = subprocess.run([sys.executable, "-m", "unittest", "-q"], cwd=buggy_repo, capture_output=True, text=True)
    assert tests.returncode == 0, tests.stderr
    trajectory = json.loads((out / "trajectory.json").read_text())
    assert trajectory["trajectory_format"] == "mini-swe-agent-1.1"
    assert trajectory["info"]["exit_status"] == "Submitted"
    assert trajectory["info"]["model_stats"]["api_calls"] == 3
    assert len(model.requests) == 3
    # The model saw the task and the real output of its failing test run.
    assert "add(2, 3) returns -1" in model.requests[0]["messages"][1]["content"]
    assert "FAILED (failures=1)" in model.requests[1]["messages"][-1]["content"]


def test_run_reports_an_unreachable_model(buggy_repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "fast-retries.yaml"
    config.write_text("model:\n  max_attempts: 2\n  retry_wait_seconds: 0.1\n")
    result = _mini_fix_run(buggy_repo, tmp_path / "out", "http://127.0.0.1:9/v1", *OUR_CONFIG, "--config", str(config))
    assert result.returncode != 0
    assert "127.0.0.1:9" in result.stdout + result.stderr
    assert (tmp_path / "out" / "trajectory.json").exists()


def test_run_stops_at_the_step_limit(buggy_repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "two-steps.yaml"
    config.write_text("agent:\n  step_limit: 2\n")
    replies = [bash_reply("ls"), bash_reply("ls -a"), bash_reply("ls -la")]
    with ScriptedModelServer(replies) as model:
        result = _mini_fix_run(buggy_repo, tmp_path / "out", model.api_base, *OUR_CONFIG, "--config", str(config))
    assert result.returncode != 0
    assert "LimitsExceeded" in result.stdout + result.stderr
    assert len(model.requests) == 2


def test_run_with_attempts_keeps_the_one_the_checkouts_tests_favour(buggy_repo: Path, tmp_path: Path) -> None:
    (buggy_repo / ".github").mkdir()
    (buggy_repo / ".github" / "mini-fix.yml").write_text("test: python3 -m unittest -q\n")
    _git(buggy_repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(buggy_repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "config")
    submit = bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nDone.\\n'")
    scripts = {
        0.0: [bash_reply("sed -i 's/a - b/a * b/' calc.py"), submit],  # the checkout's test fails on it
        0.7: [bash_reply("sed -i 's/a - b/a + b/' calc.py"), submit],
    }
    out = tmp_path / "out"
    with ScriptedModelServer([], by_temperature=scripts) as model:
        result = _mini_fix_run(buggy_repo, out, model.api_base, "--attempts", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "+    return a + b" in (out / "patch.diff").read_text()
    [first, second] = sorted(p for p in out.iterdir() if p.is_dir())
    assert "a * b" in (first / "patch.diff").read_text() and "a + b" in (second / "patch.diff").read_text()
    assert json.loads((out / "trajectory.json").read_text())["mini_fix"]["attempt"] == 2
    table = (out / "attempts.md").read_text()
    assert ":x: failed" in table and "**yes**" in table.splitlines()[-1]
    assert sorted({r["temperature"] for r in model.requests}) == [0.0, 0.7]


def test_run_with_upstreams_tool_call_config_runs_every_call(buggy_repo: Path, tmp_path: Path) -> None:
    spec = importlib.util.find_spec("minisweagent")
    assert spec is not None and spec.origin is not None
    mini = Path(spec.origin).parent / "config" / "mini.yaml"  # mini-swe-agent 2.4.6's default, as shipped
    replies = [
        tool_call_reply("cat calc.py", "sed -i 's/a - b/a + b/' calc.py", content="Read it, then fix it."),
        tool_call_reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    out = tmp_path / "out"
    with ScriptedModelServer(replies) as model:
        result = _mini_fix_run(buggy_repo, out, model.api_base, "--config", str(mini), "-c", "agent.step_limit=5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "profile mini" in result.stdout
    assert [r["tools"][0]["function"]["name"] for r in model.requests] == ["bash", "bash"]
    answered = model.requests[1]["messages"][-2:]  # both calls ran, in order, each answered by its tool message
    assert [(m["role"], m["tool_call_id"]) for m in answered] == [("tool", "call_0"), ("tool", "call_1")]
    assert "return a - b" in answered[0]["content"]
    assert "+    return a + b" in (out / "patch.diff").read_text()
    trajectory = json.loads((out / "trajectory.json").read_text())
    assert trajectory["info"]["exit_status"] == "Submitted" and trajectory["mini_fix"]["profile"] == "mini"
