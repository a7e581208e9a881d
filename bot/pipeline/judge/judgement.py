"""The one judge of a job's finished attempts, for the App, `mini-fix run` and `mini-fix eval` alike.

Refusals (protected paths, links, secrets), the App's own checks in fresh sandboxes (`verify.py`), the ranking
(`ranking.py`), the verdicts written into each attempt's trajectory, and, when no attempt may be proposed, the
partial work to publish instead or how the job ends. The result is returned, frozen; the attempts given are
left as they were (each driver reads what it needs from the `Judgement`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.pipeline.attempts import exits
from bot.pipeline.attempts.plan import Attempt, AttemptPlan
from bot.pipeline.candidates import Candidate, Choice, refusals
from bot.pipeline.capacity import Removals, SandboxSlots
from bot.pipeline.errors import RunFailed
from bot.pipeline.judge.ranking import choose
from bot.pipeline.judge.testbed import SandboxFactory
from bot.pipeline.judge.verdicts import none_acceptable, partial_work, record_verdicts
from bot.pipeline.judge.verify import verify
from bot.repo_config.schema import RepoConfig
from sandbox.base import SandboxConfig


@dataclass(frozen=True)
class Checks:
    """Where the App checks a job's attempts: fresh sandboxes holding the base checkout the attempts got."""

    checkout: Path
    factory: SandboxFactory
    sandbox_config: SandboxConfig
    repo: RepoConfig  # its test, reproduce, setup, protected paths and keep_partial_work
    run_id: str
    workdir: Path
    cancel: threading.Event
    slots: SandboxSlots | None = None  # the worker's (None: no bound)
    removals: Removals | None = None  # the job's background removals (None: each sandbox removed at once)
    setup_tolerant: bool = False  # an inferred setup (the plan's): its failure is reported, the checks go on

    @classmethod
    def of(cls, plan: AttemptPlan, checkout: Path, workdir: Path) -> Checks:
        """The checks of a plan's attempts, for every driver: its sandboxes (setup bound), sandbox, repository
        config, run id, stop and slots, on the base `checkout` the attempts got."""
        return cls(
            checkout, plan.factory, plan.sandbox_config, plan.config, plan.run_id, workdir, plan.budget.cancel,
            plan.slots, plan.removals, plan.setup_tolerant,
        )  # fmt: skip


@dataclass(frozen=True)
class Judgement:
    """What the App concluded about a job's attempts."""

    attempts: tuple[Attempt, ...]  # copies of the attempts given, each with its refusals and verdicts
    choice: Choice  # the ranking over their candidates, with a reason for every attempt
    chosen: Attempt | None  # what to publish: the chosen attempt, or partial work (`wip`); None: nothing
    wip: str = ""  # the limit (or job budget, quota) that ended the attempt whose partial change is published as WIP
    failure: RunFailed | None = None  # how the job ends when nothing may be proposed
    refused: tuple[str, ...] = ()  # the refused paths, when refusal is that ending

    @property
    def candidates(self) -> list[Candidate]:
        """Every attempt's judged candidate, in attempt order."""
        return [attempt.candidate for attempt in self.attempts]

    @property
    def test(self) -> dict[str, Any] | None:
        """The chosen attempt's `test` verdict, from a fresh sandbox."""
        return self.chosen.candidate.test if self.chosen is not None else None

    def publishable(self) -> Attempt:
        """The attempt to publish (the chosen one, or partial work); none ends the job with the judgement's failure."""
        if self.chosen is None:
            assert self.failure is not None
            raise self.failure
        return self.chosen

    @property
    def exit_status(self) -> str:
        """The chosen attempt's exit status, else every attempt's (each once)."""
        if self.chosen is not None:
            return self.chosen.candidate.exit_status
        statuses = [run.result.exit_status for run in self.attempts if run.result is not None]
        return ", ".join(dict.fromkeys(statuses))


def judge(
    runs: Sequence[Attempt],
    checks: Checks,
    *,
    secrets: list[str],
    mirror: Callable[[str, str], None] | None = None,
) -> Judgement:
    """Refuse what may not be pushed, verify the rest, choose, and record the verdicts in the trajectories (not
    when `checks.cancel` is set: a stopped job leaves them as they were)."""
    repo = checks.repo
    refused = [_refused(run.candidate, repo, secrets) for run in runs]
    verdicts = verify(
        refused,
        checkout=checks.checkout,
        factory=checks.factory,
        sandbox_config=checks.sandbox_config,
        repo=repo,
        run_id=checks.run_id,
        workdir=checks.workdir,
        cancel=checks.cancel,
        slots=checks.slots,
        removals=checks.removals,
        setup_tolerant=checks.setup_tolerant,
    )
    judged = tuple(
        replace(run, candidate=c.judged(verdicts.get(c.index))) for run, c in zip(runs, refused, strict=True)
    )
    choice = choose([run.candidate for run in judged])
    if not checks.cancel.is_set():
        record_verdicts(list(judged), choice, secrets, mirror)
    chosen = next((run for run in judged if run.candidate is choice.chosen), None)
    if chosen is not None:
        return Judgement(judged, choice, chosen)
    partial = partial_work(list(judged), repo, secrets) if repo.keep_partial_work else None
    if partial is not None and partial.result is not None:
        wip = exits.LIMIT_NAMES.get(partial.result.exit_status) or partial.candidate.budget_end
        return Judgement(judged, choice, partial, wip=wip)
    failure, paths = none_acceptable(list(judged))
    return Judgement(judged, choice, None, failure=failure, refused=tuple(paths))


def _refused(candidate: Candidate, repo: RepoConfig, secrets: list[str]) -> Candidate:
    """A copy with what in its change may not be published (protected paths, links, a worker's secret)."""
    if candidate.change is None:
        return replace(candidate)
    return replace(candidate, refused=refusals(candidate.change, repo, secrets))
