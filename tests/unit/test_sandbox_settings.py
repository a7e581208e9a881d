"""The deployment's sandbox settings reach every run's container (gVisor is one setting away)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.config import load_config
from bot.pipeline.attempts.execute import run_setup
from bot.pipeline.runconfig import resolve
from bot.repo_config.schema import RepoConfig
from bot.settings import DEFAULT_SETUP_HOSTS, Settings
from tests.support.fake_sandbox import FakeSandbox

NETWORKED = RepoConfig.model_validate({"setup": ["pip install -e ."], "setup_network": True})


def test_runtime_image_and_size_come_from_settings_and_the_network_stays_off(tmp_path: Path) -> None:
    settings = Settings(
        webhook_secret="sandbox-settings-secret", data_dir=tmp_path, sandbox_runtime="runsc",
        sandbox_image="registry.example/sandbox:1", sandbox_memory="3g", _env_file=None,
    )  # fmt: skip
    config = resolve(settings, load_config(), RepoConfig()).sandbox
    assert (config.runtime, config.image, config.memory, config.network) == (
        "runsc", "registry.example/sandbox:1", "3g", False,
    )  # fmt: skip
    default = Settings(webhook_secret="x" * 16, _env_file=None)
    assert resolve(default, load_config(), RepoConfig()).sandbox.runtime is None


def test_a_repository_gets_a_setup_network_only_where_the_operator_allows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    off = Settings(webhook_secret="x" * 16, _env_file=None)
    assert off.allow_setup_network is False
    assert resolve(off, load_config(), NETWORKED).sandbox.network is False
    monkeypatch.setenv("MINIFIX_ALLOW_SETUP_NETWORK", "true")
    monkeypatch.setenv("MINIFIX_SETUP_ALLOWED_HOSTS", "pypi.org, files.pythonhosted.org,.internal-mirror.example")
    on = Settings(webhook_secret="x" * 16, _env_file=None)
    config = resolve(on, load_config(), NETWORKED).sandbox
    assert config.network is True
    assert config.setup_hosts == ["pypi.org", "files.pythonhosted.org", ".internal-mirror.example"]
    assert resolve(on, load_config(), RepoConfig()).sandbox.network is False  # no setup, no network


def test_the_default_allowlist_is_package_registries() -> None:
    hosts = Settings(webhook_secret="x" * 16, _env_file=None).setup_allowed_hosts
    assert hosts == list(DEFAULT_SETUP_HOSTS) and "pypi.org" in hosts and "registry.npmjs.org" in hosts


def test_setup_ends_every_process_it_started_even_without_a_network(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    run_setup(sandbox, ["true"], networked=False, checkout=tmp_path)
    assert sandbox.ended_processes == 1
    run_setup(sandbox, [], networked=False, checkout=tmp_path)
    assert sandbox.ended_processes == 1  # no setup, nothing to end
