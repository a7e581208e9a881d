"""The run configuration: docs/configuration.md's precedence table, one row an assertion; clamps as notes; frozen."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bot.agent.config import DEFAULT_CONFIG_PATH, MiniFixAgentConfig, load_config, load_specs
from bot.pipeline.runconfig import Flags, ci_limit, effective_label, resolve, with_setup
from bot.pipeline.runconfig import agent_file as file_for
from bot.repo_config.devcontainer import Devcontainer
from bot.repo_config.schema import Limits, RepoConfig
from bot.settings import Settings

TEXT_MODEL = "hosted_vllm/qwen2.5-coder-1.5b"
TOOL_MODEL = "hosted_vllm/devstral-small"


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(data_dir=tmp_path, _env_file=None, **values)  # type: ignore[arg-type]


def agent_file(**sections: dict[str, object]) -> MiniFixAgentConfig:
    """prompts/agent.yaml with some keys changed, as an operator's file would."""
    specs = [str(DEFAULT_CONFIG_PATH)] + [f"{s}.{k}={v}" for s, keys in sections.items() for k, v in keys.items()]
    return load_specs(specs)


FILE = agent_file(agent={"step_limit": 11, "token_limit": 12, "wall_time_limit_seconds": 13})


def test_the_limits_come_from_the_repository_then_the_deployment_then_the_file(tmp_path: Path) -> None:
    repo = RepoConfig(limits=Limits(steps=5, tokens=6, wall_time=7))
    deployment = settings(tmp_path, step_limit=21, token_limit=22, wall_time_limit=23)

    def limits(deployment: Settings, repo: RepoConfig) -> tuple[int, int, int]:
        agent = resolve(deployment, FILE, repo).agent.agent
        return agent.step_limit, agent.token_limit, agent.wall_time_limit_seconds

    assert limits(deployment, repo) == (5, 6, 7)
    assert limits(deployment, RepoConfig()) == (21, 22, 23)
    assert limits(settings(tmp_path), RepoConfig()) == (11, 12, 13)


def test_the_jobs_total_budget_is_the_deployments_and_the_operators_own_tasks_have_none(tmp_path: Path) -> None:
    deployment = settings(tmp_path, max_tokens=1000, max_wall_time=60)
    job = resolve(deployment, FILE, RepoConfig())
    assert (job.job_tokens, job.job_seconds) == (1000, 60)  # the App and `mini-fix run`
    own = resolve(deployment, FILE, RepoConfig(), ceilings=False)
    assert (own.job_tokens, own.job_seconds) == (0, 0)  # eval: the agent's own limits only


def test_the_sandbox_outlives_the_agents_wall_time(tmp_path: Path) -> None:
    resolved = resolve(settings(tmp_path), FILE, RepoConfig(limits=Limits(wall_time=3600)))
    assert resolved.sandbox.wall_time_seconds >= 3600 + 900


def test_the_sandbox_size_comes_from_the_repository_then_the_deployment(tmp_path: Path) -> None:
    deployment = settings(tmp_path, sandbox_memory="3g", sandbox_cpus=2.0, sandbox_disk="2g")
    sized = resolve(deployment, FILE, RepoConfig(limits=Limits(memory="1g", cpus=0.5, disk="512m"))).sandbox
    assert (sized.memory, sized.cpus, sized.disk) == ("1g", 0.5, "512m")
    plain = resolve(deployment, FILE, RepoConfig()).sandbox
    assert (plain.memory, plain.cpus, plain.disk) == ("3g", 2.0, "2g")


def test_the_image_comes_from_the_flag_the_repository_the_file_then_the_deployment(tmp_path: Path) -> None:
    deployment = settings(tmp_path, sandbox_image="deploy:1", allowed_images=["*"])
    named = agent_file(environment={"image": "file:1"})
    repo = RepoConfig(image="repo:1")
    assert resolve(deployment, named, repo, Flags(image="flag:1")).sandbox.image == "flag:1"
    assert resolve(deployment, named, repo).sandbox.image == "repo:1"
    assert resolve(deployment, named, RepoConfig()).sandbox.image == "file:1"
    assert resolve(deployment, FILE, RepoConfig()).sandbox.image == "deploy:1"


def test_the_files_environment_maps_onto_the_deployments_sandbox(tmp_path: Path) -> None:
    deployment = settings(tmp_path, sandbox_image="deploy-default:1", sandbox_memory="4g")
    sandbox = resolve(deployment, agent_file(environment={"env.A": "b", "timeout": 30}), RepoConfig()).sandbox
    assert (sandbox.image, sandbox.memory, sandbox.timeout, sandbox.env["A"], sandbox.cwd) == (
        "deploy-default:1",
        "4g",
        30,
        "b",
        "/testbed",
    )
    assert sandbox.env == {**FILE.environment.env, "A": "b"}  # the file's variables, all of them
    assert resolve(deployment, agent_file(environment={"image": "custom:2"}), RepoConfig()).sandbox.image == "custom:2"


def test_the_agent_config_file_is_c_then_the_deployments_then_ours(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(DEFAULT_CONFIG_PATH.read_text().replace("step_limit: 50", "step_limit: 9"))
    deployment = settings(tmp_path, agent_config=mine)
    assert file_for(deployment, [str(DEFAULT_CONFIG_PATH), "agent.step_limit=3"]).agent.step_limit == 3
    assert file_for(deployment).agent.step_limit == 9
    assert file_for(settings(tmp_path)).agent.step_limit == 50


def test_the_model_comes_from_the_flag_the_repository_the_file_then_the_deployment(tmp_path: Path) -> None:
    deployment = settings(tmp_path, model="hosted_vllm/deploy")
    named = agent_file(model={"model_name": "hosted_vllm/file"})
    repo = RepoConfig(model="hosted_vllm/repo")
    assert resolve(deployment, named, repo, Flags(model="hosted_vllm/flag")).model.model_name == "hosted_vllm/flag"
    assert resolve(deployment, named, repo).model.model_name == "hosted_vllm/repo"
    assert resolve(deployment, named, RepoConfig()).model.model_name == "hosted_vllm/file"
    assert resolve(deployment, FILE, RepoConfig()).model.model_name == "hosted_vllm/deploy"


def test_the_api_base_comes_from_the_flag_the_file_then_the_deployment(tmp_path: Path) -> None:
    deployment = settings(tmp_path, model_api_base="http://deploy/v1")
    named = agent_file(model={"api_base": "http://file/v1"})
    assert resolve(deployment, named, RepoConfig(), Flags(api_base="http://flag/v1")).model.api_base == "http://flag/v1"
    assert resolve(deployment, named, RepoConfig()).model.api_base == "http://file/v1"
    assert resolve(deployment, FILE, RepoConfig()).model.api_base == "http://deploy/v1"


def test_attempts_come_from_the_flag_the_repository_then_the_deployment(tmp_path: Path) -> None:
    deployment = settings(tmp_path, agent_attempts=2, max_agent_attempts=5)
    assert resolve(deployment, FILE, RepoConfig(attempts=3), Flags(attempts=4)).attempts == 4
    assert resolve(deployment, FILE, RepoConfig(attempts=3)).attempts == 3
    assert resolve(deployment, FILE, RepoConfig()).attempts == 2


def test_the_operators_own_tasks_make_the_flags_attempts_else_one(tmp_path: Path) -> None:
    deployment = settings(tmp_path, agent_attempts=2, max_agent_attempts=5)
    assert resolve(deployment, FILE, RepoConfig(attempts=3), ceilings=False).attempts == 1
    assert resolve(deployment, FILE, RepoConfig(attempts=3), Flags(attempts=7), ceilings=False).attempts == 7


def test_a_setup_gets_a_network_only_where_the_repository_asks_and_the_operator_allows(tmp_path: Path) -> None:
    asks = RepoConfig(setup=["pip install -e ."], setup_network=True)
    allowed = settings(tmp_path, allow_setup_network=True)
    assert resolve(allowed, FILE, asks).setup_network and resolve(allowed, FILE, asks).sandbox.network
    assert not resolve(allowed, FILE, asks.model_copy(update={"setup": []})).setup_network  # no setup, no network
    refused = resolve(settings(tmp_path), FILE, asks)
    assert not refused.setup_network and any("MINIFIX_ALLOW_SETUP_NETWORK" in note for note in refused.notes)


def test_an_inferred_setup_gets_the_proxys_network_and_the_operators_setup_variables(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text("attrs\n")
    mirror = {"PIP_INDEX_URL": "https://u:t0ken-123@nexus/simple"}
    values = settings(tmp_path, setup_env=mirror, setup_ca_file="/ca.pem")
    config, plan = with_setup(resolve(values, FILE, RepoConfig()), checkout, values)
    assert plan.inferred and config.repo.setup == plan.commands and config.setup_network and config.sandbox.network
    env = {key: value.get_secret_value() for key, value in config.sandbox.setup_env.items()}
    assert env["PIP_INDEX_URL"] == "https://u:t0ken-123@nexus/simple" and env["npm_config_offline"] == "false"
    assert config.sandbox.setup_ca_file == "/ca.pem" and "t0ken-123" in values.secrets  # redacted wherever written
    off = settings(tmp_path, infer_setup=False)
    unchanged = resolve(off, FILE, RepoConfig())
    assert with_setup(unchanged, checkout, off)[0] is unchanged
    own = resolve(values, FILE, RepoConfig(setup=["make deps"]))
    assert with_setup(own, checkout, values)[0] is own and not own.sandbox.network


def test_an_operators_mirrors_reach_the_sandbox_config(tmp_path: Path) -> None:
    """A GOPROXY in MINIFIX_SETUP_ENV goes over the default; a cargo mirror becomes `~/.cargo/config.toml`
    (crates.io replaced) for the setup phase; mirror addresses are the proxy's to allow."""
    values = settings(
        tmp_path, setup_env={"GOPROXY": "http://10.1.2.3/go"}, setup_cargo_mirror="sparse+http://10.1.2.3/cargo",
        setup_mirror_addresses="10.1.2.3", setup_maven_mirror="http://10.1.2.3/maven?a=1&b=2",
    )  # fmt: skip
    sandbox = resolve(values, FILE, RepoConfig()).sandbox
    assert sandbox.setup_env["GOPROXY"].get_secret_value() == "http://10.1.2.3/go"
    assert sandbox.setup_mirror_addresses == ["10.1.2.3/32"]
    config = sandbox.setup_files[".cargo/config.toml"]
    assert 'replace-with = "mini-fix-mirror"' in config and 'registry = "sparse+http://10.1.2.3/cargo/"' in config
    maven = sandbox.setup_files[".m2/settings.xml"]
    assert "<mirrorOf>external:*</mirrorOf><url>http://10.1.2.3/maven?a=1&amp;b=2</url>" in maven
    plain = resolve(settings(tmp_path), FILE, RepoConfig()).sandbox.setup_files
    assert list(plain) == [".m2/settings.xml"] and "<mirror>" not in plain[".m2/settings.xml"]
    assert "<host>${env.MINIFIX_SETUP_PROXY_HOST}</host>" in plain[".m2/settings.xml"]  # Maven's way to the proxy


@pytest.mark.parametrize("bad", ["https://nexus/crates/", "sparse+https://u:tok@nexus/crates/", 'sparse+http://a/"b'])
def test_a_cargo_mirror_is_a_sparse_url_without_credentials(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="MINIFIX_SETUP_CARGO_MIRROR"):
        settings(tmp_path, setup_cargo_mirror=bad)


@pytest.mark.parametrize("bad", ["file:///srv/m2", "https://u:tok@nexus/maven/", "nexus/maven"])
def test_a_maven_mirror_is_an_http_url_without_credentials(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="MINIFIX_SETUP_MAVEN_MIRROR"):
        settings(tmp_path, setup_maven_mirror=bad)


def test_the_agent_config_is_c_as_given_else_the_models_profile_else_the_file(tmp_path: Path) -> None:
    deployment = settings(tmp_path, model=TEXT_MODEL, model_profiles="hosted_vllm/devstral*=toolcall")
    given = load_specs([str(DEFAULT_CONFIG_PATH)])
    assert resolve(deployment, given, RepoConfig(), Flags(config=("x.yaml",), model=TOOL_MODEL)).profile == "text"
    assert resolve(deployment, given, RepoConfig(), Flags(model=TOOL_MODEL)).profile == "toolcall"
    assert resolve(deployment, given, RepoConfig(model=TOOL_MODEL)).profile == "toolcall"  # the repository's model
    assert resolve(deployment, given, RepoConfig()).profile == "text"


def test_a_devcontainer_gives_its_image_and_setup_only_where_the_repository_names_none(tmp_path: Path) -> None:
    deployment = settings(tmp_path, devcontainer_images=["dev:*"], allowed_images=["repo:*"])
    dev = Devcontainer(image="dev:1", setup=["make deps"])
    used = resolve(deployment, FILE, RepoConfig(), devcontainer=dev)
    assert (used.sandbox.image, used.repo.setup) == ("dev:1", ["make deps"])
    assert resolve(deployment, FILE, RepoConfig(image="repo:1"), devcontainer=dev).sandbox.image == "repo:1"


def test_the_change_caps_are_the_deployments(tmp_path: Path) -> None:
    resolved = resolve(
        settings(tmp_path, max_changed_files=7, max_changed_bytes=8, max_export_bytes=9), FILE, RepoConfig()
    )
    assert (resolved.caps.files, resolved.caps.bytes, resolved.max_export_bytes) == (7, 8, 9)


def test_every_clamp_is_a_note_and_the_ceiling_is_used(tmp_path: Path) -> None:
    deployment = settings(tmp_path, max_steps=40, max_cpus=2.0, max_memory="2g", max_agent_attempts=3)
    asks = RepoConfig(
        limits=Limits(steps=99, cpus=8, memory="16g"), image="elsewhere:1", model="openai/gpt-x", attempts=9
    )
    resolved = resolve(deployment, FILE, asks)
    assert (resolved.agent.agent.step_limit, resolved.sandbox.cpus, resolved.sandbox.memory) == (40, 2.0, "2g")
    assert (resolved.sandbox.image, resolved.model.model_name, resolved.attempts) == (
        deployment.sandbox_image,
        deployment.model,
        3,
    )
    assert len(resolved.notes) == 6, resolved.notes
    flagged = resolve(deployment, FILE, RepoConfig(), Flags(attempts=9))
    assert flagged.attempts == 3 and flagged.notes == (
        "`--attempts 9` is above this deployment's ceiling (MINIFIX_MAX_AGENT_ATTEMPTS); used 3",
    )
    assert resolve(deployment, FILE, RepoConfig()).notes == ()


def test_the_operators_own_tasks_are_not_clamped(tmp_path: Path) -> None:
    task = RepoConfig(image="task-image:1", limits=Limits(steps=999))
    resolved = resolve(settings(tmp_path), FILE, task, ceilings=False)
    assert (resolved.sandbox.image, resolved.agent.agent.step_limit, resolved.notes) == ("task-image:1", 999, ())


def test_the_run_configuration_is_frozen_and_its_inputs_untouched(tmp_path: Path) -> None:
    file = load_config()
    before = file.model_dump()
    resolved = resolve(settings(tmp_path), file, RepoConfig(limits=Limits(steps=3)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.attempts = 2  # type: ignore[misc]
    assert file.model_dump() == before and resolved.agent.agent.step_limit == 3


def test_the_trigger_label_and_the_ci_bound_are_decided_here(tmp_path: Path) -> None:
    deployment = settings(tmp_path, label="fix-me", max_ci_followups=3)
    assert effective_label(deployment, RepoConfig()) == "fix-me"
    assert effective_label(deployment, RepoConfig(label="bot")) == "bot"
    assert (ci_limit(RepoConfig(), deployment), ci_limit(RepoConfig(ci_followups=9), deployment)) == (2, 3)
