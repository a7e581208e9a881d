"""A configuration mistake is one message on stderr naming the file or variable, the key and what to do, and exit 2:
never a traceback, in every command."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import structlog

from bot.agent.config import AgentConfigError, load_specs
from bot.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> object:
    """main() configures logging onto the test's captured stdout: put structlog back for the tests after this one."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    return repo


def test_a_partial_c_file_says_to_put_our_config_first(tmp_path: Path) -> None:
    partial = tmp_path / "cpu.yaml"
    partial.write_text("agent: {step_limit: 15}\n")
    with pytest.raises(AgentConfigError) as caught:
        load_specs([str(partial)])
    message = str(caught.value)
    assert str(partial) in message
    assert "agent.system_template: missing" in message and "agent.instance_template: missing" in message
    assert "put `-c prompts/agent.yaml` first" in message


def test_the_partial_file_after_ours_loads(tmp_path: Path) -> None:
    partial = tmp_path / "cpu.yaml"
    partial.write_text("agent: {step_limit: 15}\n")
    config = load_specs([str(ROOT / "prompts" / "agent.yaml"), str(partial), "model.model_kwargs.max_tokens=384"])
    assert config.agent.step_limit == 15
    assert config.model.model_kwargs["max_tokens"] == 384


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("agent: {step_limit: 15}\n", "put `-c prompts/agent.yaml` first"),
        ("agent: [\n", "not valid YAML at line 2"),
        ("- a list\n", "must be a YAML mapping"),
        (None, "cannot read the agent config"),
    ],
)
def test_mini_fix_run_with_a_bad_config_exits_2_with_one_message(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, expected: str
) -> None:
    config = tmp_path / "bad.yaml"
    if text is not None:
        config.write_text(text)
    argv = ["run", "--repo", str(checkout), "--task", "x", "-c", str(config), "--api-base", "http://127.0.0.1:9/v1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "mini-fix: configuration error:" in err and expected in err and str(config) in err
    assert "Traceback" not in err


def test_agent_step_limit_as_a_number_that_is_not(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--repo", str(checkout), "--task", "x", "-c", str(ROOT / "prompts" / "agent.yaml")]
    assert main([*argv, "-c", "agent.step_limit=many", "--api-base", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert "agent.step_limit:" in err and "integer" in err


def test_a_setting_that_does_not_parse_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MINIFIX_WORKERS", "several")
    assert main(["jobs"]) == 2
    err = capsys.readouterr().err
    assert "MINIFIX_WORKERS:" in err and "integer" in err and "Traceback" not in err


def test_a_missing_task_file_is_a_message(checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["run", "--repo", str(checkout), "--task-file", str(tmp_path / "none.md")]) == 2
    assert "--task-file" in capsys.readouterr().err


def test_a_bad_profile_table_is_a_configuration_error(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MINIFIX_MODEL_PROFILES", "hosted_vllm/*")
    assert main(["run", "--repo", str(checkout), "--task", "x", "--api-base", "http://127.0.0.1:9/v1"]) == 2
    assert "MINIFIX_MODEL_PROFILES" in capsys.readouterr().err
