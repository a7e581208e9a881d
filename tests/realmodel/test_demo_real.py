"""scripts/demo.sh with the real CPU model, as a new user runs it (a short step limit for CI's time): it runs to its
verdict, and it leaves running the model server it did not start (the tier's)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.realmodel.conftest import SCRIPT, RealModel

pytestmark = [pytest.mark.realmodel, pytest.mark.docker]
ROOT = Path(__file__).resolve().parents[2]


def test_demo_with_the_real_model_reaches_its_verdict_and_leaves_the_server(
    real_model: RealModel, tmp_path: Path
) -> None:
    env = {**os.environ, "MINIFIX_DEMO_STEP_LIMIT": "3", "MINIFIX_DATA_DIR": str(tmp_path / "data")}
    env.pop("MINIFIX_DEMO_API_BASE", None)
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")], capture_output=True, text=True, env=env, timeout=1500
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "demo: RESULT: the bug is" in result.stdout
    assert "=== verdict" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert subprocess.run([str(SCRIPT), "running"], capture_output=True).returncode == 0, "the demo stopped it"
