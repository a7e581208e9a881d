"""verify() in real Docker sandboxes: reproduction verdicts and cross-validation from the engine's exit codes."""

from __future__ import annotations

import threading
from pathlib import Path

import docker
import pytest

from bot.pipeline.judge.ranking import choose
from bot.pipeline.judge.verify import verify
from bot.repo_config.schema import RepoConfig
from sandbox.base import Sandbox, SandboxConfig
from sandbox.docker import DockerSandbox
from tests.integration.conftest import small_config
from tests.support.candidates import CLAIM, FIX, REPO_TEST, REPRO, calc_base, candidate

pytestmark = pytest.mark.docker


def test_reproductions_and_cross_validation_in_fresh_sandboxes(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    base = calc_base(tmp_path)
    good = candidate(base, 1, FIX, REPRO)
    claimed = candidate(base, 2, FIX, CLAIM)
    unfixed = candidate(base, 3, REPRO)
    started: list[str] = []

    def factory(config: SandboxConfig, run_id: str) -> Sandbox:
        started.append(run_id)
        return DockerSandbox.start(config, run_id, client=docker_client, labels={"mini-fix.test": "verify"})

    verdicts = verify(
        [good, claimed, unfixed],
        checkout=base,
        factory=factory,
        sandbox_config=small_config(),
        repo=RepoConfig(test=REPO_TEST),
        run_id="verify-test",
        workdir=tmp_path,
        cancel=threading.Event(),
    )
    good, claimed, unfixed = (c.judged(verdicts.get(c.index)) for c in (good, claimed, unfixed))
    assert good.reproduction is not None and good.reproduction.valid
    assert "AssertionError: -1 != 5" in good.reproduction.before
    assert claimed.reproduction is not None and claimed.reproduction.fails_before is False
    assert not claimed.reproduction.valid
    assert unfixed.reproduction is not None and unfixed.reproduction.fails_before is True
    assert unfixed.reproduction.passes_after is False
    assert (good.cross, claimed.cross, unfixed.cross) == ({}, {1: True}, {1: False})
    assert [c.test["passed"] for c in (good, claimed, unfixed) if c.test] == [True, True, False]
    assert len(started) == 8 and len(set(started)) == 8  # before + after each, and a cross sandbox for 2 and 3
    assert not docker_client.containers.list(all=True, filters={"label": "mini-fix.test=verify"})

    choice = choose([good, claimed, unfixed])
    assert choice.chosen is good  # ties with 2 on tests and reproductions passed, wins on index
    assert "passes 1 of 1 valid reproduction tests" in choice.reasons[1]
