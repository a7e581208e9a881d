"""`mini-fix eval -c`: mini-swe-agent's `-c`, as `mini-fix run` has it (replaces ours; repeatable; key.path=value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.config import DEFAULT_CONFIG_PATH
from bot.eval import cli
from bot.eval.command import EvalRequest, eval_context
from bot.eval.tasks import EvalTask
from bot.settings import Settings
from tests.unit.test_agent_config import UPSTREAM_CONFIGS


def context(argv: list[str], tmp_path: Path) -> tuple[EvalRequest, Settings]:
    """The request `mini-fix eval` builds from `argv`, through its own parser."""
    args = cli._run_parser().parse_args(["tasks.jsonl", "--output", str(tmp_path / "out"), *argv])
    request = EvalRequest(args.tasks, args.output, config=args.config, model=args.model, image=args.image)
    return request, Settings(data_dir=tmp_path, _env_file=None)


def test_eval_c_replaces_our_config_with_mini_swe_agents_own(tmp_path: Path) -> None:
    request, settings = context(["-c", str(UPSTREAM_CONFIGS / "mini_textbased.yaml")], tmp_path)
    ctx = eval_context(request, settings)
    assert ctx.agent_config.agent.first_action_only is False  # none of prompts/agent.yaml's small-model defaults
    assert "stop" not in ctx.model_config.model_kwargs and ctx.model_config.model_name == settings.model


def test_eval_c_is_repeatable_and_takes_key_value_pairs_merged_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["-c", str(DEFAULT_CONFIG_PATH), "--config", "agent.step_limit=7", "-c", "agent.mode=yolo"]
    request, settings = context(argv, tmp_path)
    ctx = eval_context(request, settings)
    assert (ctx.agent_config.agent.first_action_only, ctx.agent_config.agent.step_limit) == (True, 7)
    assert "warning: config key ignored: agent.mode" in capsys.readouterr().err
    without = eval_context(context([], tmp_path)[0], settings)  # no -c: our file
    assert (without.agent_config.profile, without.agent_config.agent.step_limit) == ("text", 50)


def test_evals_attempts_are_decided_in_the_run_configuration_never_by_the_deployments_setting(
    tmp_path: Path,
) -> None:
    request, settings = context([], tmp_path)
    ctx = eval_context(request, settings.model_copy(update={"agent_attempts": 3}))
    task = EvalTask(instance_id="t", repo="o/r", base_commit="0" * 40, problem_statement="x", git=str(tmp_path))
    assert ctx.run_config(task).attempts == 1  # no --attempts: one, whatever MINIFIX_AGENT_ATTEMPTS says
    assert ctx.run_config(task, attempts=4).attempts == 4 and ctx.run_config(task).model == ctx.model_config


def test_eval_image_is_over_a_tasks_own_as_in_run(tmp_path: Path) -> None:
    request, settings = context(["--image", "flag:1"], tmp_path)
    ctx = eval_context(request, settings.model_copy(update={"allowed_images": ["*"]}))
    task = EvalTask(
        instance_id="t", repo="o/r", base_commit="0" * 40, problem_statement="x", git=str(tmp_path), image="task:1"
    )
    assert ctx.run_config(task).sandbox.image == "flag:1"
    plain = eval_context(context([], tmp_path)[0], settings)
    assert plain.run_config(task).sandbox.image == "task:1"
    assert "--image" in cli._run_parser().format_help() and cli.USAGE
