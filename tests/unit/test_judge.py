"""The one judge: refusals, verification, the choice and the ending come back as a frozen Judgement; the attempts
given are left exactly as they were."""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
from pathlib import Path

import pytest

from bot.agent.loop import AgentResult
from bot.jobs import Outcome
from bot.pipeline.attempts.plan import Attempt
from bot.pipeline.candidates import Candidate
from bot.pipeline.judge.judgement import Checks, judge
from bot.repo_config.schema import RepoConfig
from sandbox.base import SandboxConfig
from tests.support.candidates import CLAIM, FIX, REPO_TEST, REPRO, calc_base, candidate
from tests.support.fake_sandbox import FakeSandbox


def _result(status: str = "Submitted") -> AgentResult:
    return AgentResult(status, "", 2, 100, 10, 0.0, 1.0, [])


def _checks(base: Path, repo: RepoConfig, cancel: threading.Event | None = None) -> Checks:
    factory = lambda _config, _run_id: FakeSandbox()  # noqa: E731
    return Checks(base, factory, SandboxConfig(), repo, "job", base.parent, cancel or threading.Event())


def test_the_judgement_is_frozen_and_the_attempts_given_are_untouched(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    workflow = candidate(base, 3, FIX, (".github/workflows/ci.yml", "on: push\n"))
    runs = [
        Attempt(candidate(base, 1, FIX, REPRO), _result()),
        Attempt(candidate(base, 2, FIX, CLAIM), _result()),
        Attempt(workflow, _result()),
    ]
    before = copy.deepcopy(runs)

    judgement = judge(runs, _checks(base, RepoConfig(test=REPO_TEST)), secrets=[])

    assert runs == before  # no verdict, refusal or choice was written into what the judge was given
    assert all(c.test is None and c.reproduction is None and not c.refused for c in (r.candidate for r in runs))
    with pytest.raises(dataclasses.FrozenInstanceError):
        judgement.chosen = None  # type: ignore[misc]
    good, claimed, refused = judgement.candidates
    assert judgement.chosen is not None and judgement.chosen.candidate is good is judgement.choice.chosen
    assert good.reproduction is not None and good.reproduction.valid and claimed.cross == {1: True}
    assert refused.refused == [".github/workflows/ci.yml"] and refused.test is None  # refused: never verified
    assert judgement.test is not None and judgement.test["passed"] and judgement.exit_status == "Submitted"
    assert judgement.failure is None and judgement.wip == ""
    assert [c.index for c in judgement.choice.ranking] == [1, 2]


def test_refused_attempts_end_the_job_with_their_paths_returned_not_filled_in(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    runs = [Attempt(candidate(base, 1, FIX, (".github/workflows/ci.yml", "on: push\n")), _result())]
    judgement = judge(runs, _checks(base, RepoConfig(test=REPO_TEST)), secrets=[])
    assert judgement.chosen is None and judgement.refused == (".github/workflows/ci.yml",)
    assert judgement.failure is not None and judgement.failure.outcome == Outcome.PROTECTED_PATHS
    assert runs[0].candidate.refused == []


def test_partial_work_is_a_copy_with_the_partial_change(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    partial = candidate(base, 1, FIX).change
    limited = Candidate(index=1, run_id="run-1", exit_status="LimitsExceeded", partial=partial)
    runs = [Attempt(limited, _result("LimitsExceeded"))]
    judgement = judge(runs, _checks(base, RepoConfig(test=REPO_TEST, keep_partial_work=True)), secrets=[])
    assert judgement.chosen is not None and judgement.chosen.candidate.change == partial
    assert judgement.wip and judgement.failure is None and judgement.exit_status == "LimitsExceeded"
    assert limited.change is None and runs[0].candidate is limited  # the attempt given still has no change


def test_verdicts_go_into_the_trajectories_unless_the_job_was_stopped(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    trajectory = tmp_path / "trajectory.json"
    trajectory.write_text('{"mini_fix": {}}')
    runs = [Attempt(candidate(base, 1, FIX, REPRO), _result(), trajectory=trajectory)]
    cancel = threading.Event()
    cancel.set()
    stopped = judge(runs, _checks(base, RepoConfig(test=REPO_TEST), cancel), secrets=[])
    assert trajectory.read_text() == '{"mini_fix": {}}'
    assert stopped.candidates[0].test is not None and stopped.candidates[0].test["passed"] is False

    judge(runs, _checks(base, RepoConfig(test=REPO_TEST)), secrets=[])
    recorded = json.loads(trajectory.read_text())["mini_fix"]
    assert recorded["chosen"] is True and recorded["test"]["passed"] and recorded["reproduction"]["valid"]
