"""`mini-fix eval --attempts` in process: attempts that differ, the App's verification and choice, the oracle."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import docker
import pytest

from bot.agent.config import ModelConfig, load_config
from bot.agent.model_base import Model, ModelReply
from bot.eval.harness import run_tasks
from bot.eval.solve import EvalContext
from bot.eval.store import ResultStore
from bot.eval.tasks import EvalTask
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig
from sandbox.docker import DockerSandbox
from tests.integration.conftest import IMAGE
from tests.support.buggy_repos import REPOS
from tests.support.buggy_tasks import eval_task, scripted_commands
from tests.support.scripted_model import ScriptedModel, bash

pytestmark = pytest.mark.docker


class _Logged:
    """A scripted attempt's model that logs its temperature at every request, in the order the requests came."""

    def __init__(self, model: ScriptedModel, heat: float, log: list[float]) -> None:
        self.name, self._model, self._heat, self._log = model.name, model, heat, log

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        self._log.append(self._heat)
        return self._model.query(messages)


def _context(
    tmp: Path,
    client: docker.DockerClient,
    attempts: int | None,
    seen: list[float],
    requests: list[float] | None = None,
    attempt_workers: int | None = None,
) -> EvalContext:
    settings = Settings(webhook_secret="s" * 32, data_dir=tmp / "data", sandbox_image=IMAGE, _env_file=None)

    def model(config: ModelConfig) -> Model:
        heat = float(config.model_kwargs["temperature"])
        seen.append(heat)
        return _Logged(
            ScriptedModel([bash(c) for c in scripted_commands("calc", heat)]),
            heat,
            [] if requests is None else requests,
        )

    def sandbox(config: SandboxConfig, run_id: str) -> Sandbox:
        return DockerSandbox.start(config.model_copy(update={"memory": "512m"}), run_id, client=client)

    config = load_config(None)
    out = tmp / f"out-{attempts}"
    cancel = threading.Event()
    return EvalContext(settings, config, config.model, model, sandbox, out, cancel, attempts, attempt_workers)


def test_three_attempts_choose_the_small_fix_with_a_valid_reproduction(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    task = EvalTask.model_validate(eval_task(REPOS["calc"], tmp_path / "repos"))
    temperatures: list[float] = []
    ctx = _context(tmp_path, docker_client, 3, temperatures)
    store = ResultStore(ctx.output)
    lines: list[str] = []
    run_tasks([task], ctx, store, workers=1, say=lines.append)
    report = store.write_report([task], "scripted", [])
    record = store.finished()["calc"]

    assert sorted(temperatures) == [0.0, 0.7, 1.0]
    assert (record["chosen"], record["resolved"], record["any_resolved"]) == (3, True, True)
    assert (report["resolved"], report["any_resolved"], report["reproduction_valid"]) == (1, 1, 1)
    broken, large, small = record["attempts"]
    assert (broken["test"]["passed"], broken["test"]["returncode"], broken["test"]["verdict"]) == (False, 1, "failed")
    assert "its change uses `no_such_module`" in broken["test"]["summary"] and broken["resolved"] is False
    assert broken["cross"] == {"3": False} and "tests fail on it" in broken["reason"]
    assert large["test"]["passed"] and large["resolved"] is True and large["cross"] == {"3": True}
    assert "larger change" in large["reason"] and large["lines_changed"] > small["lines_changed"]
    assert small["reproduction"]["valid"] and small["reproduction"]["files"] == ["tests/test_reproduce_issue.py"]
    assert small["chosen"] and small["reason"].startswith("chosen: the repository's tests pass")
    assert "return a + b" in record["model_patch"] and "no_such_module" not in record["model_patch"]
    assert len({a["run_id"] for a in record["attempts"]}) == 3
    assert sum(a["steps"] for a in record["attempts"]) == record["steps"] == 2 + 2 + 4

    traj = ctx.trajectory_path(task)
    chosen = json.loads(traj.read_text())
    assert chosen["mini_fix"]["run_id"] == small["run_id"] and chosen["mini_fix"]["eval"]["resolved"] is True
    own = json.loads(traj.with_name("calc.attempt-1.traj.json").read_text())
    assert own["mini_fix"]["eval"]["chosen"] is False and own["mini_fix"]["run_id"] == broken["run_id"]
    assert lines[-1].startswith("[1/1] resolved 1") and lines[-1].endswith(
        "(attempt 3 of 3 chosen; any attempt resolved: yes)"
    )

    again: list[str] = []
    run_tasks([task], ctx, store, workers=1, say=again.append)
    assert again == ["resuming: 1 of 1 already finished, 0 to run"] and len(temperatures) == 3


def test_one_attempt_keeps_the_configs_temperature_and_can_miss(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    task = EvalTask.model_validate(eval_task(REPOS["calc"], tmp_path / "repos"))
    temperatures: list[float] = []
    ctx = _context(tmp_path, docker_client, 1, temperatures)
    store = ResultStore(ctx.output)
    run_tasks([task], ctx, store, workers=1, say=lambda _line: None)
    record = store.finished()["calc"]
    assert temperatures == [0.0] and record["attempts"][0]["temperature"] is None
    assert (record["chosen"], record["resolved"], record["any_resolved"]) == (1, False, False)


def test_one_attempt_worker_runs_the_attempts_one_after_another(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    task = EvalTask.model_validate(eval_task(REPOS["calc"], tmp_path / "repos"))
    temperatures: list[float] = []
    requests: list[float] = []
    ctx = _context(tmp_path, docker_client, 3, temperatures, requests, attempt_workers=1)
    store = ResultStore(ctx.output)
    run_tasks([task], ctx, store, workers=1, say=lambda _line: None)
    record = store.finished()["calc"]
    # each attempt's requests all come before the next attempt's first one: no two attempts ever overlapped
    assert requests == [0.0] * 2 + [0.7] * 2 + [1.0] * 4
    assert [a["temperature"] for a in record["attempts"]] == [0.0, 0.7, 1.0]
    assert len({a["run_id"] for a in record["attempts"]}) == 3
    assert (record["chosen"], record["resolved"], record["any_resolved"]) == (3, True, True)
