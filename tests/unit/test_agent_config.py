"""Loading agent configs: our default, mini-swe-agent's own files unchanged, aliases, and reported keys."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from bot.agent.config import (
    ACTION_REGEX,
    DEFAULT_CONFIG_PATH,
    AgentConfigError,
    load_config,
    load_specs,
    spec_to_dict,
)


def _upstream_configs() -> Path:
    spec = importlib.util.find_spec("minisweagent")  # locates the package without importing it
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "config"


UPSTREAM_CONFIGS = _upstream_configs()


def test_the_default_config_has_our_budgets_and_no_warnings() -> None:
    config = load_config()
    assert (config.agent.step_limit, config.agent.cost_limit) == (50, 0)
    assert (config.agent.wall_time_limit_seconds, config.agent.token_limit) == (1800, 2_000_000)
    assert (config.environment.timeout, config.environment.cwd) == (120, "/testbed")
    assert config.environment.env["PAGER"] == "cat"
    assert config.model.action_regex == ACTION_REGEX
    assert config.warnings == []


def test_the_default_system_prompt_is_the_same_for_every_run() -> None:
    assert "{{" not in load_config().agent.system_template  # nothing per-run: the prefix cache depends on it


def test_mini_swe_agent_textbased_config_loads_unchanged() -> None:
    path = UPSTREAM_CONFIGS / "mini_textbased.yaml"
    raw = yaml.safe_load(path.read_text())
    config = load_config(path)
    assert config.agent.system_template == raw["agent"]["system_template"]
    assert config.agent.instance_template == raw["agent"]["instance_template"]
    assert config.model.observation_template == raw["model"]["observation_template"]
    assert config.model.format_error_template == raw["model"]["format_error_template"]
    assert config.model.model_kwargs == {"drop_params": True}
    assert config.environment.env == raw["environment"]["env"]
    assert (config.agent.step_limit, config.agent.cost_limit) == (0, 3.0)
    assert config.warnings == ["agent.mode: mini-swe-agent setting, ignored by mini-fix"]


def test_version_one_agent_keys_move_to_the_model_section(tmp_path: Path) -> None:
    path = tmp_path / "v1.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "agent": {
                    "system_template": "s",
                    "instance_template": "{{task}}",
                    "action_observation_template": "OBS {{output.output}}",
                    "format_error_template": "FMT",
                    "timeout_template": "TIMEOUT {{output}}",
                }
            }
        )
    )
    config = load_config(path)
    assert (config.model.observation_template, config.model.format_error_template) == (
        "OBS {{output.output}}",
        "FMT",
    )
    assert config.agent.timeout_template == "TIMEOUT {{output}}"
    assert config.warnings == []


def test_unknown_and_foreign_keys_are_reported_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "agent": {"system_template": "s", "instance_template": "i", "step_limt": 5},
                "environment": {
                    "forward_env": ["GITHUB_TOKEN"],
                    "run_args": ["--privileged"],
                    "image": "img:1",
                },
                "extras": {"x": 1},
            }
        )
    )
    config = load_config(path)
    assert sorted(config.warnings) == [
        "agent.step_limt: unknown key, ignored",
        "environment.forward_env: mini-swe-agent setting, ignored by mini-fix",
        "environment.run_args: mini-swe-agent setting, ignored by mini-fix",
        "extras: unknown section, ignored",
    ]
    assert config.environment.image == "img:1"
    assert "warnings" not in config.model_dump()


def test_overrides_are_deep_merged_over_the_file() -> None:
    config = load_config(overrides={"agent": {"step_limit": 7}, "environment": {"env": {"FOO": "1"}}})
    assert config.agent.step_limit == 7
    assert config.agent.system_template == load_config().agent.system_template
    assert config.environment.env["FOO"] == "1" and config.environment.env["PAGER"] == "cat"


def test_wrong_types_are_errors() -> None:
    with pytest.raises(AgentConfigError, match=r"agent\.step_limit: Input should be a valid integer"):
        load_config(overrides={"agent": {"step_limit": "many"}})


def test_default_path_is_the_repository_prompt_file() -> None:
    assert Path(__file__).resolve().parents[2] / "prompts" / "agent.yaml" == DEFAULT_CONFIG_PATH


def test_config_specs_replace_our_default_and_merge_in_order(tmp_path: Path) -> None:
    upstream = UPSTREAM_CONFIGS / "mini_textbased.yaml"
    alone = load_specs([str(upstream)])
    # Given at all, --config replaces prompts/agent.yaml: none of our small-model defaults leak in.
    assert alone.agent.first_action_only is False
    assert alone.model.model_kwargs == {"drop_params": True}
    assert alone.agent.system_template == yaml.safe_load(upstream.read_text())["agent"]["system_template"]
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("agent:\n  step_limit: 9\nenvironment:\n  env:\n    FOO: '1'\n")
    layered = load_specs([str(DEFAULT_CONFIG_PATH), str(overlay), "agent.step_limit=20", "model.model_kwargs.seed=7"])
    assert layered.agent.step_limit == 20  # later specs win
    assert layered.agent.first_action_only is True  # ours, named first
    assert layered.environment.env["FOO"] == "1" and layered.environment.env["PAGER"] == "cat"  # merged, not replaced
    assert layered.model.model_kwargs["seed"] == 7 and layered.model.model_kwargs["max_tokens"] == 1024


def test_a_key_value_spec_reads_its_value_as_json_else_as_text() -> None:
    assert spec_to_dict("model.model_kwargs.temperature=0.5") == {"model": {"model_kwargs": {"temperature": 0.5}}}
    assert spec_to_dict("model.model_name=hosted_vllm/x") == {"model": {"model_name": "hosted_vllm/x"}}
    assert spec_to_dict('model.model_kwargs.stop=["\\n"]') == {"model": {"model_kwargs": {"stop": ["\n"]}}}
    with pytest.raises(ValueError, match="empty key"):
        spec_to_dict("agent..step_limit=3")


def test_the_action_format_follows_model_class_else_the_configs_own_format(tmp_path: Path) -> None:
    assert load_config(UPSTREAM_CONFIGS / "mini.yaml").model.tool_calls is True
    assert load_config(UPSTREAM_CONFIGS / "mini_textbased.yaml").model.tool_calls is False
    assert load_config(DEFAULT_CONFIG_PATH).model.tool_calls is False
    text = load_specs([str(UPSTREAM_CONFIGS / "mini.yaml"), "model.model_class=litellm_textbased"])
    assert text.model.tool_calls is False
    tools = load_specs([str(DEFAULT_CONFIG_PATH), "model.model_class=litellm"])
    assert tools.model.tool_calls is True
