"""README's first command, `scripts/demo.sh`, end to end: the real script, the real sandbox (the slim image), and a
scripted model server in place of llama.cpp (MINIFIX_DEMO_API_BASE, as documented in the script)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.model_server import ScriptedModelServer, bash_reply

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]
NEW_TEST = (
    "import unittest\\n\\nfrom calc import add\\n\\n\\nclass AddTest(unittest.TestCase):\\n"
    "    def test_add(self):\\n        self.assertEqual(add(2, 3), 5)\\n"
)
FIX = [
    bash_reply("cat calc/ops.py", "Read the code."),
    bash_reply("sed -i 's/return a - b/return a + b/' calc/ops.py && cat calc/ops.py", "add subtracts: fix it."),
    bash_reply(f"printf '{NEW_TEST}' > tests/test_add.py && python3 -m unittest discover -s tests -t .", "Test it."),
    bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nadd() adds.\\n'", "Submit."),
]
NO_FIX = [
    bash_reply("cat calc/ops.py", "Read the code."),
    bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nnothing.\\n'", "Submit without a change."),
]


def _demo(api_base: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MINIFIX_DEMO_API_BASE": api_base,
        "MINIFIX_DEMO_MODEL": "hosted_vllm/scripted",
        "MINIFIX_DATA_DIR": str(tmp_path / "data"),
        "TMPDIR": str(tmp_path),
    }
    env.pop("MINIFIX_SANDBOX_IMAGE", None)
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")], capture_output=True, text=True, env=env, timeout=900
    )


def test_demo_runs_end_to_end_and_says_plainly_that_the_bug_was_fixed(tmp_path: Path) -> None:
    with ScriptedModelServer(FIX) as model:
        result = _demo(model.api_base, tmp_path)
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in out + result.stderr
    # The steps, the patch and the App's own verdict, as `mini-fix show` prints them.
    assert "$ sed -i 's/return a - b/return a + b/' calc/ops.py" in out
    assert "+    return a + b" in out
    assert "test of the bug (tests/test_add.py): before the change fails, after it passes" in out
    assert "RESULT: fixed" in out
    # The demo's own checks in the sandbox image: the repository's tests and the hidden test, before and after.
    assert "the bug's own test (never shown to the model):     before FAIL, after pass" in out
    assert "the repository's tests (python3 -m unittest discover): before pass, after pass" in out
    assert "demo: RESULT: the bug is FIXED" in out
    assert len(model.requests) == len(FIX)


def test_demo_says_plainly_when_the_bug_is_not_fixed(tmp_path: Path) -> None:
    with ScriptedModelServer(NO_FIX) as model:
        result = _demo(model.api_base, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "demo: RESULT: the bug is NOT fixed: the agent proposed no change" in result.stdout
    assert "RESULT: no change was proposed" in result.stdout
