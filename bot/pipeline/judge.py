"""Judging a job's attempts once all have ended: refusals, the App's own checks in fresh sandboxes, the choice."""

from __future__ import annotations

from pathlib import Path

from bot.jobs import Outcome
from bot.pipeline import exits
from bot.pipeline.attempts import Attempt
from bot.pipeline.choose import attempts_table, choose
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.errors import RunFailed
from bot.pipeline.report import run_link
from bot.pipeline.state import RunState
from bot.pipeline.verdicts import none_acceptable, partial_work, record_verdicts, refuse
from bot.pipeline.verify import verify
from sandbox.base import SandboxConfig


def judge(
    state: RunState,
    deps: PipelineDeps,
    runs: list[Attempt],
    sandbox_config: SandboxConfig,
    *,
    checkout: Path,
    scratch: Path,
    secrets: list[str],
) -> Attempt:
    """Refuse what may not be pushed, verify the rest in fresh sandboxes, choose; the chosen attempt or the
    outcome (RunFailed) of a job none of whose attempts may be proposed."""
    candidates = [run.candidate for run in runs]
    for candidate in candidates:
        refuse(candidate, state.config, secrets)
    state.candidates = candidates
    verify(
        candidates,
        checkout=checkout,
        factory=deps.sandbox,
        sandbox_config=sandbox_config,
        repo=state.config,
        run_id=state.run["run_id"],
        workdir=scratch,
        cancel=state.cancel,
        slots=deps.sandbox_slots,
    )
    if state.cancel.is_set():
        raise RunFailed(Outcome.CANCELLED)
    choice = choose(candidates)
    record_verdicts(runs, choice, secrets, deps.save_trajectory)
    if state.count > 1:
        links = {
            run.candidate.index: run_link(deps.settings, run.candidate.run_id) if run.trajectory else None
            for run in runs
        }
        state.table = attempts_table(choice, candidates, links)
    chosen = next((run for run in runs if run.candidate is choice.chosen), None)
    statuses = [run.result.exit_status for run in runs if run.result is not None]
    state.run["exit_status"] = ", ".join(dict.fromkeys(statuses))
    if chosen is None and state.config.keep_partial_work:
        chosen = partial_work(runs, state.config, secrets)
        if chosen is not None and chosen.result is not None:
            state.wip = exits.LIMIT_NAMES[chosen.result.exit_status]
    if chosen is None:
        state.result = runs[0].result if state.count == 1 else None
        raise none_acceptable(runs, state.paths)
    state.result, state.test = chosen.result, chosen.candidate.test
    state.run["exit_status"] = chosen.candidate.exit_status
    state.link_run_id = chosen.candidate.run_id
    return chosen
