"""`mini-fix eval mine`, `eval` and `eval compare` as a user runs them: real CLI, sandbox, HTTP model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.eval_repo import build_repo, write_issues
from tests.support.model_server import ScriptedModelServer, bash_reply

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

SUBMIT = bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n'")
SHOUT_FIX = bash_reply("sed -i 's/text.lower() + /text.upper() + /' textkit/strings.py")
COUNT_FIX = bash_reply("printf 'def word_count(text):\\n    return len(text.split())\\n' > textkit/count.py")


def _replies(fix_count: bool) -> list[Callable[[list[dict[str, Any]]], str]]:
    """Turn N of whichever task the history is about: shout is fixed; word_count only when `fix_count`."""

    def turn(n: int) -> Callable[[list[dict[str, Any]]], str]:
        def reply(messages: list[dict[str, Any]]) -> str:
            shout = "shout" in messages[1]["content"]
            script = [SHOUT_FIX, SUBMIT] if shout else [COUNT_FIX, SUBMIT] if fix_count else [SUBMIT]
            return script[n]

        return reply

    return [turn(0), turn(1)]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINIFIX_DATA_DIR": str(cwd / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], capture_output=True, text=True, env=env, timeout=600, cwd=cwd
    )


def _eval(tmp: Path, out: str, model: ScriptedModelServer, name: str = "hosted_vllm/scripted") -> Any:
    return _cli("eval", "mined.jsonl", "--output", out, "--model", name, "--api-base", model.api_base, cwd=tmp)


def test_mine_eval_compare(tmp_path: Path) -> None:
    build_repo(tmp_path / "textkit")
    write_issues(tmp_path / "issues.json")
    # The word_count commit links no issue: --statement-from-tests keeps it with a statement written from its failing
    # test alone (never from its commit message, which names the fix).
    mine = ["eval", "mine", "textkit", "--issues", "issues.json", "--statement-from-tests", "--output", "mined.jsonl"]
    mined = _cli(*mine, cwd=tmp_path)
    assert mined.returncode == 0, mined.stderr
    assert "3 candidate(s), kept 2" in mined.stdout, mined.stdout
    assert json.loads((tmp_path / "mined.summary.json").read_text())["kept"] == 2
    statements = [json.loads(line)["problem_statement"] for line in (tmp_path / "mined.jsonl").read_text().splitlines()]
    assert not any("Counts whitespace-separated words" in s or "Add word_count()" in s for s in statements)
    assert any(s.startswith("The test ") for s in statements), statements

    with ScriptedModelServer(_replies(fix_count=False), by_turn=True) as model:
        first = _eval(tmp_path, "run-a", model)
        refused = _eval(tmp_path, "run-a", model, name="hosted_vllm/other")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "resolved 1/2" in first.stdout and "[2/2] resolved 1" in first.stdout
    assert refused.returncode == 2 and "holds results of hosted_vllm/scripted" in refused.stderr
    report = json.loads((tmp_path / "run-a" / "report.json").read_text())
    assert (report["resolved"], report["total"]) == (1, 2)
    assert {t["exit_status"] for t in report["tasks"]} == {"Submitted"}
    assert all(t["steps"] >= 1 and t["tokens"] > 0 for t in report["tasks"])
    assert len((tmp_path / "run-a" / "predictions.jsonl").read_text().splitlines()) == 2

    with ScriptedModelServer(_replies(fix_count=True), by_turn=True) as model:
        second = _eval(tmp_path, "run-b", model)
    assert "resolved 2/2" in second.stdout, second.stdout + second.stderr
    compared = _cli("eval", "compare", "run-a", "run-b", "--json", cwd=tmp_path)
    flips = json.loads(compared.stdout)
    assert len(flips["fixed"]) == 1 and "textkit" in flips["fixed"][0] and flips["broken"] == []
    assert (flips["a"]["resolved"], flips["b"]["resolved"]) == (1, 2)
