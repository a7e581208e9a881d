"""`mini-fix run --attempts N`: held to the operator's ceiling as the App holds a repository's `attempts:`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.cli.local_run import LocalRunRequest
from bot.pipeline.local import run_config
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings

CEILING = "is above this deployment's ceiling (MINIFIX_MAX_AGENT_ATTEMPTS); used 3"


def attempt_count(request: LocalRunRequest, settings: Settings, repo: RepoConfig | None = None) -> tuple[int, str]:
    """The run's attempts and the note on them ('' when none), as `mini-fix run` resolves them."""
    resolved = run_config(request.flags(), repo or RepoConfig(), settings)
    return resolved.attempts, next((n for n in resolved.notes if "MAX_AGENT_ATTEMPTS" in n), "")


def test_attempts_above_the_ceiling_are_clamped_with_a_note(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, max_agent_attempts=3, _env_file=None)
    request = LocalRunRequest(repo=tmp_path, task="fix it", attempts=9)
    assert attempt_count(request, settings) == (3, f"`--attempts 9` {CEILING}")
    assert attempt_count(replace(request, attempts=3), settings) == (3, "")
    assert attempt_count(replace(request, attempts=0), settings) == (1, "")  # 0: the deployment's default, 1
    from_env = settings.model_copy(update={"agent_attempts": 4})
    assert attempt_count(replace(request, attempts=None), from_env) == (3, f"`MINIFIX_AGENT_ATTEMPTS=4` {CEILING}")


def test_the_old_attempts_variables_still_work_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIFIX_ATTEMPTS", "2")
    monkeypatch.setenv("MINIFIX_MAX_ATTEMPTS", "4")
    with pytest.warns(FutureWarning, match="MINIFIX_ATTEMPTS is deprecated: set MINIFIX_AGENT_ATTEMPTS"):
        settings = Settings(data_dir=tmp_path, _env_file=None)
    assert (settings.agent_attempts, settings.max_claims) == (2, 4)
    monkeypatch.setenv("MINIFIX_AGENT_ATTEMPTS", "3")
    monkeypatch.setenv("MINIFIX_MAX_CLAIMS", "5")
    assert (Settings(data_dir=tmp_path, _env_file=None).agent_attempts, Settings(_env_file=None).max_claims) == (3, 5)


def test_a_self_hosted_model_without_an_address_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.agent.config import ModelConfig, missing_api_base
    from bot.cli.local_run import run_local
    from tests.support.buggy_repos import CALC, build

    assert missing_api_base(ModelConfig(model_name="hosted_vllm/x", api_base="http://h:8000/v1")) is None
    assert missing_api_base(ModelConfig(model_name="anthropic/claude")) is None  # litellm knows its endpoint
    settings = Settings(data_dir=tmp_path / "data", model="hosted_vllm/mini-fix", _env_file=None)
    request = LocalRunRequest(repo=build(CALC, tmp_path / "calc"), task="fix add", output=tmp_path / "out")
    assert run_local(request, settings) == 2  # before any sandbox or model call, not after minutes of retries
    assert "pass --api-base" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_local_run_takes_the_checkouts_image_limits_network_and_attempts_as_the_app_would(tmp_path: Path) -> None:
    from bot.repo_config.schema import Limits

    settings = Settings(
        data_dir=tmp_path,
        allowed_images=["mini-fix-sandbox:*"],
        allow_setup_network=True,
        max_steps=40,
        max_agent_attempts=3,
        _env_file=None,
    )
    repo = RepoConfig(
        image="mini-fix-sandbox:slim",
        limits=Limits(steps=99, memory="1g", cpus=0.5),
        setup=["pip install -e ."],
        setup_network=True,
        attempts=9,
    )
    request = LocalRunRequest(repo=tmp_path, task="fix it")
    resolved = run_config(request.flags(), repo, settings)
    sandbox, notes = resolved.sandbox, resolved.notes
    assert (sandbox.image, sandbox.memory, sandbox.cpus, sandbox.network) == ("mini-fix-sandbox:slim", "1g", 0.5, True)
    assert resolved.agent.agent.step_limit == 40 and resolved.setup_network  # the ceiling, as the App clamps
    assert any("limits.steps: 99" in n for n in notes) and any("attempts: 9" in n for n in notes)
    assert attempt_count(request, settings, repo) == (3, "")  # the repository's attempts, clamped
    assert run_config(replace(request, image="other:1").flags(), repo, settings).sandbox.image == "other:1"
    denied = settings.model_copy(update={"allowed_images": [], "allow_setup_network": False})
    resolved = run_config(request.flags(), repo, denied)
    assert resolved.sandbox.image == denied.sandbox_image
    assert not resolved.sandbox.network and len(resolved.notes) == 4
