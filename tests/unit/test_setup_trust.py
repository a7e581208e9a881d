"""Which jobs' setup may write the setup cache: a job whose checkout is the default branch's head (a fix, a
`--fresh` retry) trusts it; a retry or follow-up building on mini-fix/issue-N (agent-written commits) never does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.jobs import JobDetails, JobKind, JobStatus
from bot.pipeline.attempts.setup_cache import RepoSetup
from tests.support.fake_github import FakeGitHub
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, github

__all__ = ["github"]  # the fixture, shared with test_pipeline


def test_only_a_job_on_the_default_branchs_head_trusts_its_checkout(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trusted: list[str] = []
    trust = RepoSetup.trust

    def recorded(self: RepoSetup, checkout: Path, commit: str) -> None:
        trusted.append(commit)
        trust(self, checkout, commit)

    monkeypatch.setattr(RepoSetup, "trust", recorded)
    replies: list[Any] = [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)]
    world = World(github, tmp_path, [*replies, bash("echo '# v3' >> calc.py"), bash(SUBMIT)])
    main = github.branch_head(REPO, "main")

    assert world.run().status == JobStatus.SUCCEEDED  # a fix: cloned from main
    assert trusted == [main]

    retry = world.run(id="job2", kind=JobKind.RETRY, guidance="also add a comment")  # on mini-fix/issue-N
    assert retry.status == JobStatus.SUCCEEDED, retry.error
    assert trusted == [main]  # the PR branch holds agent-written commits: its setup is never stored

    fresh = world.run(id="job3", kind=JobKind.RETRY, details=JobDetails(fresh=True))  # from main again
    assert fresh.status == JobStatus.SUCCEEDED, fresh.error
    assert trusted == [main, main]
