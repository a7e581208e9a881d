"""The deployment's sandbox settings reach every run's container (gVisor is one setting away)."""

from __future__ import annotations

from pathlib import Path

from bot.agent.config import load_config
from bot.pipeline.admit import sandbox_config_for
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings


def test_runtime_image_and_size_come_from_settings_and_the_network_stays_off(tmp_path: Path) -> None:
    settings = Settings(
        webhook_secret="sandbox-settings-secret", data_dir=tmp_path, sandbox_runtime="runsc",
        sandbox_image="registry.example/sandbox:1", sandbox_memory="3g", _env_file=None,
    )  # fmt: skip
    config = sandbox_config_for(load_config(), settings, RepoConfig())
    assert (config.runtime, config.image, config.memory, config.network) == (
        "runsc", "registry.example/sandbox:1", "3g", False,
    )  # fmt: skip
    default = Settings(webhook_secret="x" * 16, _env_file=None)
    assert sandbox_config_for(load_config(), default, RepoConfig()).runtime is None
