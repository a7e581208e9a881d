"""A run on a commit this machine clones itself, with no forge: `mini-fix run` and `mini-fix eval`'s tasks. One flow
for both (a clean clone of the commit through the quarantine, the driver's frozen plan for that clone, the App's
engine, the App's judge); what differs between them is the driver: where the commit is, the plan and the task text.
The App's own run (`run.py`) clones with an installation token and publishes from inside the clone, so it keeps its
flow; the engine, plan and judge are the same three."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bot.pipeline.attempts.engine import started
from bot.pipeline.attempts.plan import AttemptPlan
from bot.pipeline.git.hostgit import base_checkout
from bot.pipeline.judge.judgement import Checks, Judgement, judge


@dataclass(frozen=True)
class Planned:
    """What a driver runs on a clone: its frozen plan and the agent's task."""

    plan: AttemptPlan
    task: str


class Driver(Protocol):
    """What differs between the runs on this machine."""

    @property
    def source(self) -> str:
        """What git clones: a checkout's path or a repository's URL."""

    @property
    def commit(self) -> str:
        """The commit the attempts start from."""

    @property
    def secrets(self) -> Sequence[str]:
        """What never leaves the host in a trajectory or a change."""

    def planned(self, checkout: Path) -> Planned:
        """The plan and task for `checkout`, the clone the attempts get (a driver may read it: inferred tests)."""


@dataclass(frozen=True)
class Attempted:
    """The judged attempts and where they ran (`checkout`, the base clone; valid while the caller's `scratch` is)."""

    judgement: Judgement
    checkout: Path
    judge_seconds: float


def attempted(driver: Driver, scratch: Path) -> Attempted:
    """Clone the driver's commit into `scratch`/repo, run its plan's attempts there, judge them as the App does
    (after the engine's unused containers are gone). GitError: the commit could not be cloned."""
    checkout = scratch / "repo"
    base_checkout(driver.source, driver.commit, checkout)
    planned = driver.planned(checkout)
    secrets = list(driver.secrets)
    with started(planned.plan) as engine:
        runs = engine.run(planned.task, checkout, scratch, secrets)
    began = time.monotonic()
    judgement = judge(runs, Checks.of(planned.plan, checkout, scratch), secrets=secrets)
    return Attempted(judgement, checkout, time.monotonic() - began)
