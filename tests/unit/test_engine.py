"""The engine's own bounds: `Turns` (at most K of a job's attempts, in order) and containers removed on a crash."""

from __future__ import annotations

import threading
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest

from bot.agent.config import ModelConfig, load_config
from bot.agent.model_base import Model
from bot.jobs import Outcome
from bot.pipeline.attempts.engine import started
from bot.pipeline.attempts.plan import AttemptPlan
from bot.pipeline.capacity import JobBudget, Turns
from bot.pipeline.runconfig import RunConfig, resolve
from bot.repo_config import infer
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from sandbox.base import SandboxConfig
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash


def test_turns_admit_attempts_in_order_and_at_most_the_limit() -> None:
    turns, stop, got = Turns(2), threading.Event(), []
    third = threading.Thread(target=lambda: got.append(turns.take(3, stop)))
    third.start()
    assert turns.take(1, stop) and turns.take(2, stop)
    third.join(0.3)  # were it admitted, it would return within milliseconds
    assert third.is_alive() and got == []  # two running: the third waits for one to end
    turns.give()
    third.join(30)
    assert got == [True]
    stop.set()
    assert not turns.take(4, stop)  # a stopped job starts nothing more
    assert Turns(0).take(7, threading.Event())  # no bound: no order either


def test_a_model_factory_that_raises_ends_the_attempt_and_removes_its_container(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    config = load_config(None)

    def boom(_config: ModelConfig) -> Model:
        raise RuntimeError("no model")

    plan = AttemptPlan(
        count=1,
        run_id="r",
        factory=lambda _config, _run_id: sandbox,
        sandbox_config=SandboxConfig(),
        agent=config,
        model=config.model,
        make_model=boom,
        config=RepoConfig(),
        networked=False,
        max_export_bytes=1 << 20,
        trajectory_path=lambda run_id: tmp_path / run_id / "trajectory.json",
        meta={},
        budget=JobBudget(tokens=0, seconds=0, cancel=threading.Event()),
    )
    (tmp_path / "checkout").mkdir()
    with started(plan) as attempts:
        [attempt] = attempts.run("fix it", tmp_path / "checkout", tmp_path, secrets=[])
    assert attempt.failure is not None and attempt.failure.outcome == Outcome.AGENT_CRASHED
    assert "no model" in attempt.failure.detail and sandbox.closed and attempt.model_seconds == 0.0


def _resolved(tmp_path: Path) -> RunConfig:
    settings = Settings(webhook_secret="s" * 32, data_dir=tmp_path, _env_file=None)
    return resolve(settings, load_config(None), RepoConfig())


def _plan(tmp_path: Path, sandbox: FakeSandbox) -> AttemptPlan:
    return AttemptPlan.of(
        _resolved(tmp_path),
        run_id="r",
        factory=lambda _config, _run_id: sandbox,
        make_model=lambda _config: ScriptedModel([bash("true")]),
        trajectory_path=lambda run_id: tmp_path / run_id / "trajectory.json",
        meta={},
        cancel=threading.Event(),
    )


def test_a_plan_is_frozen_and_the_clones_settling_is_a_new_plan(tmp_path: Path) -> None:
    plan = _plan(tmp_path, FakeSandbox())
    with pytest.raises(FrozenInstanceError):
        plan.testing = {"test_command": "pytest"}  # type: ignore[misc]
    tested = (RepoConfig(test="pytest -q"), infer.TestPlan("python", "pytest -q", "configured", "pytest FILE"))
    settled = plan.settled(replace(_resolved(tmp_path), setup_network=True), tested)
    assert settled is not plan and plan.testing == {} and plan.config.test is None and not plan.networked
    assert settled.testing["test_command"] == "pytest -q" and settled.config.test == "pytest -q" and settled.networked
    assert (settled.run_id, settled.budget, settled.count) == (plan.run_id, plan.budget, plan.count)


def test_the_engine_refuses_a_settled_plan_that_changes_what_its_containers_started_by(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    plan = _plan(tmp_path, sandbox)
    (tmp_path / "checkout").mkdir()
    with started(plan) as attempts, pytest.raises(ValueError, match="settled plan"):
        attempts.run("fix it", tmp_path / "checkout", tmp_path, [], replace(plan, count=2))
    assert sandbox.closed  # the container started early was removed unused
