"""Agent profiles: the shipped two, the operator's glob table, and where the profile's name is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent import profiles
from bot.agent.config import DEFAULT_CONFIG_PATH, load_config, load_specs
from bot.cli.local_run import LocalRunRequest
from bot.pipeline.local import run_config
from bot.pipeline.runconfig import resolve
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings

TABLE = "hosted_vllm/qwen2.5-coder-1.5b*=text, hosted_vllm/*=toolcall"


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(data_dir=tmp_path, _env_file=None, **values)  # type: ignore[arg-type]


def test_the_shipped_profiles_are_one_text_and_one_tool_call_config() -> None:
    text, toolcall = profiles.load_profile("text"), profiles.load_profile("toolcall")
    assert (text.profile, text.model.tool_calls) == ("text", False)
    assert (toolcall.profile, toolcall.model.tool_calls, toolcall.warnings) == ("toolcall", True, [])
    # The reply cap, the call timeout and the step limit are the profile's own.
    assert toolcall.model.model_kwargs["max_tokens"] > text.model.model_kwargs["max_tokens"]
    assert toolcall.agent.step_limit > text.agent.step_limit and "stop" not in toolcall.model.model_kwargs


def test_the_first_matching_glob_picks_the_profile(tmp_path: Path) -> None:
    assert profiles.profile_for("hosted_vllm/Qwen2.5-Coder-1.5B-Instruct", TABLE) == "text"
    assert profiles.profile_for("hosted_vllm/minimax-m2", TABLE) == "toolcall"
    assert profiles.profile_for("openai/gpt-4o", TABLE) is None
    default = load_config()
    unmatched = resolve(settings(tmp_path, model="openai/gpt-4o", model_profiles=TABLE), default, RepoConfig())
    assert unmatched.agent.model_dump(exclude={"agent"}) == default.model_dump(exclude={"agent"})  # the file itself


@pytest.mark.parametrize("table", ["no-equals-sign", "=toolcall", "x/*=nonexistent-profile"])
def test_a_bad_table_is_refused_at_startup(tmp_path: Path, table: str) -> None:
    with pytest.raises(ValueError, match="MINIFIX_MODEL_PROFILES"):
        settings(tmp_path, model_profiles=table)


def test_a_profile_may_be_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(DEFAULT_CONFIG_PATH.read_text().replace("step_limit: 50", "step_limit: 7"))
    deployment = settings(tmp_path, model="hosted_vllm/x", model_profiles=f"hosted_vllm/*={path}")
    resolved = resolve(deployment, load_config(), RepoConfig()).agent
    assert (resolved.profile, resolved.agent.step_limit) == ("mine", 7)


def test_the_app_runs_the_jobs_model_with_its_profile_under_the_repositorys_limits(tmp_path: Path) -> None:
    deployment = settings(tmp_path, model="hosted_vllm/qwen2.5-coder-1.5b", model_profiles=TABLE)
    small = resolve(deployment, load_config(), RepoConfig()).agent
    assert (small.profile, small.model.tool_calls) == ("text", False)
    repo = RepoConfig.model_validate({"model": "hosted_vllm/devstral-small", "limits": {"steps": 12}})
    big = resolve(deployment, load_config(), repo).agent
    assert (big.profile, big.model.tool_calls, big.agent.step_limit) == ("toolcall", True, 12)
    assert big.model.model_name == "hosted_vllm/devstral-small"


def test_mini_fix_run_uses_the_profile_unless_config_is_given(tmp_path: Path) -> None:
    deployment = settings(tmp_path, model_profiles=TABLE)
    request = LocalRunRequest(repo=tmp_path, task="t", model="hosted_vllm/glm-4.6")
    assert run_config(request.flags(), RepoConfig(), deployment).profile == "toolcall"
    request.config = [str(DEFAULT_CONFIG_PATH), "agent.step_limit=3"]
    given = run_config(request.flags(), RepoConfig(), deployment).agent
    assert (given.profile, given.agent.step_limit) == ("text", 3)
    assert load_specs(["agent.step_limit=3", "agent.system_template=s", "agent.instance_template=i"]).profile == (
        "custom"
    )
