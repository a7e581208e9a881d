"""`mini-fix eval --attempts N`: N attempts at one task, verified and chosen as the App does.

The attempts run up to `--attempt-workers K` at a time (default all N, in parallel; K=1 one after another, for a
model server that answers one request at a time). Each attempt has its own sandbox, temperature
(`agent.attempt_temperatures`), trajectory and run id. The App's own verification and choice pick one; that one is
graded (`resolved`), and so is every other submitted attempt, so the report also says whether any attempt solved the
task (`any_resolved`): how good the choice was.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bot.agent.config import ModelConfig
from bot.eval.grade import Grade
from bot.eval.hostgit import GitFailed, base_checkout
from bot.eval.solve import (
    RETRIED_ON_RESUME,
    EvalContext,
    error_record,
    grade_patch,
    run_attempt,
    sandbox_config,
    since,
)
from bot.eval.tasks import EvalTask
from bot.pipeline.candidates import Candidate, Choice, refusals
from bot.pipeline.choose import choose, reproductions_passed
from bot.pipeline.errors import RunFailed, SetupFailed
from bot.pipeline.verify import verify
from bot.trajectory import annotate_trajectory
from sandbox.base import SandboxError

TOTALS = ("steps", "tokens", "prompt_tokens", "completion_tokens", "format_errors", "model_seconds")


def temperature(ctx: EvalContext, index: int, attempts: int) -> float | None:
    """Attempt `index`'s temperature from the schedule; None (the config's own) when there is one attempt."""
    schedule = ctx.agent_config.agent.attempt_temperatures
    return schedule[(index - 1) % len(schedule)] if attempts > 1 and schedule else None


def solve_attempts(task: EvalTask, ctx: EvalContext, attempts: int) -> dict[str, Any]:
    """Run `attempts` attempts at one task, verify and choose, grade; the report's record (never a raise)."""
    started = time.monotonic()
    group = uuid.uuid4().hex[:12]
    record: dict[str, Any] = {"instance_id": task.instance_id, "repo": task.repo, "run_id": group}
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-eval-{group}-") as name:
        tmp, checkout = Path(name), Path(name) / "repo"
        try:
            base_checkout(task.git, task.base_commit, checkout)
        except GitFailed as exc:
            return record | error_record(exc, started)
        workers = min(ctx.attempt_workers or attempts, attempts)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"attempt-{task.instance_id}") as pool:
            runs = list(pool.map(lambda k: _attempt(task, ctx, checkout, tmp, k, attempts), range(1, attempts + 1)))
        candidates = [c for c, _ in runs]
        began = time.monotonic()
        verify(
            candidates,
            checkout=checkout,
            factory=ctx.sandbox,
            sandbox_config=sandbox_config(task, ctx),
            repo=task.repo_config(),
            run_id=group,
            workdir=tmp,
            cancel=ctx.cancel,
        )
        record["verify_seconds"] = since(began)
        choice = choose(candidates)
        began = time.monotonic()
        grades = {
            c.index: grade_patch(task, ctx, c.change.diff, f"{c.run_id}-grade", tmp)
            for c in candidates
            if c.change is not None and c.submitted and not ctx.cancel.is_set()
        }
        record["grade_seconds"] = since(began)
    rows = [_row(c, stats, choice, grades.get(c.index)) for c, stats in runs]
    _annotate(task, ctx, rows)
    return record | _summary(rows, choice, grades) | {"seconds": since(started)}


def _attempt(
    task: EvalTask, ctx: EvalContext, checkout: Path, tmp: Path, index: int, attempts: int
) -> tuple[Candidate, dict[str, Any]]:
    """One attempt as a candidate, and its statistics; an attempt that fails says why, it never raises."""
    run_id = uuid.uuid4().hex[:12]
    heat = temperature(ctx, index, attempts)
    candidate = Candidate(index=index, run_id=run_id, temperature=heat)
    began = time.monotonic()
    try:
        attempt = run_attempt(
            task,
            ctx,
            run_id,
            tmp,
            checkout=checkout,
            model_config=_sampling(ctx.model_config, heat),
            trajectory=attempt_trajectory(ctx, task, index),
        )
    except (SetupFailed, RunFailed, SandboxError) as exc:
        detail = f"{exc.outcome}: {exc.detail}" if isinstance(exc, RunFailed) else str(exc)
        return _failed(candidate, detail, began)
    except Exception as exc:  # one attempt's crash must not lose the others
        return _failed(candidate, "internal error: " + traceback.format_exception_only(exc)[-1].strip(), began)
    candidate.exit_status, candidate.change = attempt.result.exit_status, attempt.change
    candidate.steps, candidate.seconds = attempt.result.steps, since(began)
    candidate.tokens = attempt.result.prompt_tokens + attempt.result.completion_tokens
    if attempt.change is not None:
        candidate.refused = refusals(attempt.change, task.repo_config(), ctx.settings.secrets)
    return candidate, attempt.stats


def _failed(candidate: Candidate, detail: str, began: float) -> tuple[Candidate, dict[str, Any]]:
    candidate.exit_status, candidate.error, candidate.seconds = "error", detail, since(began)
    return candidate, {"exit_status": "error", "error": detail}


def _sampling(config: ModelConfig, heat: float | None) -> ModelConfig:
    if heat is None:
        return config
    return config.model_copy(update={"model_kwargs": {**config.model_kwargs, "temperature": heat}})


def attempt_trajectory(ctx: EvalContext, task: EvalTask, index: int) -> Path:
    """Where attempt `index` of a task writes its own trajectory."""
    return ctx.trajectory_path(task).with_name(f"{task.instance_id}.attempt-{index}.traj.json")


def _row(c: Candidate, stats: dict[str, Any], choice: Choice, graded: Grade | None) -> dict[str, Any]:
    """One attempt in the report."""
    rep = c.reproduction
    return {
        "index": c.index,
        "run_id": c.run_id,
        "temperature": c.temperature,
        **{k: stats.get(k, 0) for k in TOTALS},
        "exit_status": c.exit_status,
        **({"error": c.error} if c.error else {}),
        "seconds": c.seconds,
        "lines_changed": c.lines_changed,
        "refused": c.refused,
        "test": None if c.test is None else {"passed": c.test.get("passed"), "returncode": c.test.get("returncode")},
        "reproduction": None
        if rep is None
        else {
            "files": rep.files,
            "fails_before": rep.fails_before,
            "passes_after": rep.passes_after,
            "valid": rep.valid,
            "detail": rep.detail,
        },
        "dropped_tests": None if c.dropped is None else c.dropped.tests,
        "cross": {str(k): v for k, v in sorted(c.cross.items())},
        "reproductions_passed": reproductions_passed(c),
        "chosen": choice.chosen is c,
        "reason": choice.reasons.get(c.index, ""),
        "resolved": bool(graded and graded.resolved),
        **({"tests": graded.as_json()} if graded else {}),
    }


def _summary(rows: list[dict[str, Any]], choice: Choice, grades: dict[int, Grade]) -> dict[str, Any]:
    """The task's record: the chosen attempt's patch and verdict, the oracle, totals over the attempts."""
    chosen = choice.chosen
    verdict = grades.get(chosen.index) if chosen else None
    summary: dict[str, Any] = {k: round(sum(r[k] for r in rows), 1) for k in TOTALS}
    summary |= {
        "exit_status": _status(rows, chosen),
        "attempts": rows,
        "chosen": chosen.index if chosen else None,
        "resolved": bool(verdict and verdict.resolved),
        "any_resolved": any(g.resolved for g in grades.values()),
        "model_patch": chosen.change.diff if chosen and chosen.change else "",
        "tests": verdict.as_json() if verdict else {},
    }
    if chosen is None:
        summary["error"] = "no acceptable attempt: " + "; ".join(f"{r['index']}: {r['reason']}" for r in rows)
    return summary


def _status(rows: list[dict[str, Any]], chosen: Candidate | None) -> str:
    """The task's exit status: one an eval rerun retries if any attempt had it, else the chosen attempt's."""
    statuses = [str(r["exit_status"]) for r in rows]
    retried = [s for s in statuses if s in RETRIED_ON_RESUME]
    if retried:
        return retried[0]
    if chosen is not None:
        return chosen.exit_status
    return "error" if all(s == "error" for s in statuses) else statuses[0]


def _annotate(task: EvalTask, ctx: EvalContext, rows: list[dict[str, Any]]) -> None:
    """Each attempt's trajectory learns its verdict; the chosen one is also the task's trajectory (SWE-bench's)."""
    for row in rows:
        path = attempt_trajectory(ctx, task, row["index"])
        keep = ("chosen", "reason", "resolved", "reproduction", "reproductions_passed", "test")
        annotate_trajectory(
            path, "eval", {"instance_id": task.instance_id, "attempt": row["index"]} | {k: row[k] for k in keep}
        )
        if row["chosen"] and path.exists():
            shutil.copyfile(path, ctx.trajectory_path(task))
