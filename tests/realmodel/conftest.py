"""The `realmodel` tier: a real small coder model (Qwen2.5-Coder-1.5B on llama.cpp's OpenAI server, CPU).

scripts/ensure-model.sh builds or reuses the serving stack and the verified weights and starts the server; the
session stops it again unless it was already running. In CI (CI=true) a failed setup fails the tier; elsewhere
it skips with the reason, and MINIFIX_SKIP_REALMODEL=1 skips it on purpose. Budgets are kept small (a few steps,
short replies): these tests check that the real thing works end to end, not that the model fixes the bug.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.agent.config import DEFAULT_CONFIG_PATH, deep_merge
from tests.support.tiers import honour_realmodel_opt_out, setup_failed

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ensure-model.sh"
SETUP_SECONDS = 1800  # a fresh machine compiles llama.cpp (6-13 minutes) and downloads 1.1 GB of weights
# Small budgets for CI: each reply at most 192 tokens (~20-40 s on two busy cores), a few steps per run.
TIER_CONFIG: dict[str, Any] = {
    "agent": {"step_limit": 4, "wall_time_limit_seconds": 600},
    "model": {"model_kwargs": {"max_tokens": 192, "timeout": 240, "temperature": 0.0, "seed": 1}},
}


@dataclass(frozen=True)
class RealModel:
    """The running server: where it listens and the litellm name that reaches it."""

    api_base: str
    alias: str

    @property
    def litellm_name(self) -> str:
        """The production path's model name: litellm's hosted_vllm provider on an OpenAI-compatible server."""
        return f"hosted_vllm/{self.alias}"


@pytest.fixture(scope="session")
def real_model() -> Iterator[RealModel]:
    """The 1.5B behind llama.cpp on 127.0.0.1, started for the session if it was not already running."""
    honour_realmodel_opt_out()
    # By the PID file, not an HTTP call: a server busy generating for another process may not answer in time, and
    # taking it for "not running" would stop it under that process.
    was_running = subprocess.run([str(SCRIPT), "running"], capture_output=True).returncode == 0
    try:
        started = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, timeout=SETUP_SECONDS)
    except subprocess.TimeoutExpired:
        setup_failed("realmodel", f"scripts/ensure-model.sh start took over {SETUP_SECONDS}s")
    if started.returncode != 0:
        setup_failed(
            "realmodel", f"scripts/ensure-model.sh start exited {started.returncode}:\n{started.stderr[-3000:]}"
        )
    alias = os.environ.get(
        "MINIFIX_REAL_MODEL_ALIAS", f"qwen2.5-coder-{os.environ.get('MINIFIX_REAL_MODEL_SIZE', '1.5b')}"
    )
    yield RealModel(started.stdout.strip().splitlines()[-1], alias)
    if not was_running:
        subprocess.run([str(SCRIPT), "stop"], capture_output=True, timeout=60)


@pytest.fixture
def tier_overlay(tmp_path: Path) -> Path:
    """The tier's budgets as a `--config` overlay file."""
    path = tmp_path / "realmodel-overlay.yaml"
    path.write_text(yaml.safe_dump(TIER_CONFIG))
    return path


@pytest.fixture
def tier_agent_config(tmp_path: Path) -> Path:
    """prompts/agent.yaml with the tier's budgets laid over it, as a whole file (for MINIFIX_AGENT_CONFIG)."""
    path = tmp_path / "realmodel-agent.yaml"
    base = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))
    path.write_text(yaml.safe_dump(deep_merge(base, TIER_CONFIG)))
    return path
