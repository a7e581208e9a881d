"""An inferred setup's failure does not end the run: decided by the run configuration, before the plan is made,
and read from the plan by the attempts and the checks (never set on the setup after sandboxes started)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bot.agent.config import load_config
from bot.pipeline.attempts.execute import run_setup
from bot.pipeline.attempts.plan import AttemptPlan
from bot.pipeline.attempts.setup_cache import RepoSetup, SetupOptions
from bot.pipeline.errors import RunFailed
from bot.pipeline.judge.judgement import Checks
from bot.pipeline.runconfig import resolve, with_setup
from bot.repo_config import infer
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from sandbox.base import SandboxConfig
from tests.support.fake_sandbox import FakeSandbox


def _plan(tmp_path: Path, repo: RepoConfig) -> AttemptPlan:
    checkout = tmp_path / "repo"
    checkout.mkdir(exist_ok=True)
    (checkout / "requirements.txt").write_text("attrs\n")
    settings = Settings(data_dir=tmp_path, _env_file=None)
    resolved, _ = with_setup(resolve(settings, load_config(), repo), checkout, settings)
    return AttemptPlan.of(
        resolved,
        infer.resolve(resolved.repo, checkout),
        run_id="r",
        factory=lambda _config, _run_id: FakeSandbox(),
        make_model=lambda _config: None,  # type: ignore[arg-type,return-value]
        trajectory_path=lambda run_id: tmp_path / run_id,
        meta={},
        cancel=threading.Event(),
    )


def test_the_plan_says_an_inferred_setup_is_tolerated_and_the_checks_take_it_from_the_plan(tmp_path: Path) -> None:
    inferred = _plan(tmp_path, RepoConfig())
    assert inferred.config.setup and inferred.setup_tolerant
    assert Checks.of(inferred, tmp_path / "repo", tmp_path).setup_tolerant
    own = _plan(tmp_path, RepoConfig(setup=["make deps"]))
    assert not own.setup_tolerant and not Checks.of(own, tmp_path / "repo", tmp_path).setup_tolerant


def test_a_tolerated_setup_that_fails_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    said: list[str] = []
    setup = RepoSetup("o/r", SetupOptions(timeout=60), on_report=said.append)
    factory = setup.bind(lambda _config, _run_id: FakeSandbox())
    with pytest.raises(RunFailed):
        run_setup(factory(SandboxConfig(), "a"), ["exit 3"], networked=False, checkout=tmp_path)
    run_setup(factory(SandboxConfig(), "b"), ["exit 3"], networked=False, checkout=tmp_path, tolerant=True)
    assert said and "failed" in said[-1]
