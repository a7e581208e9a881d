"""What the App concludes about a job's attempts (for `judgement.py`): the partial work to publish, how a job with none
to propose ends, the verdicts written into each attempt's trajectory. Nothing here changes the attempts given."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import structlog

from bot import metrics
from bot.jobs import Outcome
from bot.pipeline.attempts import exits
from bot.pipeline.attempts.plan import Attempt
from bot.pipeline.candidates import Choice, refusals
from bot.pipeline.errors import RunFailed
from bot.repo_config.schema import RepoConfig
from bot.trajectory import redact, write_atomic

log = structlog.get_logger(__name__)


def partial_work(runs: list[Attempt], config: RepoConfig, secrets: list[str]) -> Attempt | None:
    """The first attempt a step, token or time limit (or the job's token budget or wall time, a quota) ended with a
    non-empty change that passes the protected-path, link and secret checks, as a copy whose change is that partial
    one (to publish as work in progress); None when there is none."""
    for run in runs:
        candidate, result = run.candidate, run.result
        if candidate.partial is None or not candidate.partial.diff.strip() or result is None:
            continue
        ended = exits.limit_ended(result.exit_status) or candidate.budget_end  # the job's budget, a quota
        if not ended or refusals(candidate.partial, config, secrets):
            continue
        return replace(run, candidate=replace(candidate, change=candidate.partial))
    return None


def _ending(attempt: Attempt) -> Outcome:
    outcome = attempt.outcome
    return outcome if outcome is not None else Outcome.PROTECTED_PATHS  # a change, but refused


def none_acceptable(runs: list[Attempt]) -> tuple[RunFailed, list[str]]:
    """How a job ends when no attempt may be proposed: the one ending every attempt shares (a single attempt's
    own, as before there were several), else `no_acceptable_attempt`; and the refused paths when refusal is it."""
    endings = Counter(_ending(run) for run in runs)
    if len(endings) > 1:
        how = ", ".join(f"{n} {ending}" for ending, n in sorted(endings.items()))
        return RunFailed(Outcome.NO_ACCEPTABLE_ATTEMPT, f"none of the {len(runs)} attempts can be proposed: {how}"), []
    [ending] = endings
    if ending == Outcome.PROTECTED_PATHS:
        paths = list(dict.fromkeys(path for run in runs for path in run.candidate.refused))
        return RunFailed(ending, ", ".join(paths)), paths
    details = [run.failure.detail for run in runs if run.failure is not None and run.failure.detail]
    return RunFailed(ending, "; ".join(dict.fromkeys(details))), []


def record_verdicts(
    runs: list[Attempt], choice: Choice, secrets: list[str], mirror: Callable[[str, str], None] | None
) -> None:
    """Write what the App found into each attempt's trajectory (`mini_fix.test`, `.reproduction`, `.chosen`,
    `.dropped_tests`)."""
    for run in runs:
        candidate = run.candidate
        if run.trajectory is None or not run.trajectory.exists():
            continue
        verdicts: dict[str, Any] = {"chosen": candidate is choice.chosen}
        if candidate.test is not None:
            verdicts["test"] = candidate.test
        if candidate.reproduction is not None:
            verdicts["reproduction"] = {**asdict(candidate.reproduction), "valid": candidate.reproduction.valid}
        if candidate.dropped is not None:
            verdicts["dropped_tests"] = asdict(candidate.dropped)
        if candidate.refused:
            verdicts["refused"] = candidate.refused
        try:
            text = annotate(run.trajectory, redact(verdicts, secrets))
        except OSError:  # the App's own disk is full or failing: the verdicts are in the PR, the change goes on
            metrics.TRAJECTORY_WRITE_FAILURES.inc()
            log.warning("trajectory verdicts not written", run_id=candidate.run_id, exc_info=True)
            continue
        if mirror is not None:
            try:
                mirror(candidate.run_id, text)
            except Exception:  # the database is down: the local file has the verdicts
                log.warning("trajectory verdicts not stored in the database", run_id=candidate.run_id, exc_info=True)


def annotate(path: Path, values: dict[str, Any]) -> str:
    """Set these keys of a saved trajectory's `mini_fix` block; the new text."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("mini_fix", {}).update(values)
    text = json.dumps(data, default=str)
    write_atomic(path, text)
    return text
