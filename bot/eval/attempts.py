"""`mini-fix eval --attempts N`: N attempts at one task, verified and chosen as the App does.

The attempts run in the App's engine (`pipeline/attempts/engine.py`), up to `--attempt-workers K` at a time
(default all N, in parallel; K=1 one after another, in order, for a model server that answers one request at a
time). Each attempt has its own sandbox, temperature (`agent.attempt_temperatures`), trajectory and run id. The App's
own judge picks one; that one is graded (`resolved`), and so is every other submitted attempt, so the report also
says whether any attempt solved the task (`any_resolved`): how good the choice was.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

from bot.eval.grade import Grade
from bot.eval.solve import (
    RETRIED_ON_RESUME,
    EvalContext,
    EvalDriver,
    attempt_stats,
    error_record,
    grade_patch,
    since,
)
from bot.eval.tasks import EvalTask
from bot.pipeline.attempts.plan import Attempt
from bot.pipeline.candidates import Candidate, Choice
from bot.pipeline.git.gitops import GitError
from bot.pipeline.judge.ranking import reproductions_passed
from bot.pipeline.onhost import attempted
from bot.trajectory import annotate_trajectory

TOTALS = ("steps", "tokens", "prompt_tokens", "completion_tokens", "format_errors", "model_seconds")


def solve_attempts(task: EvalTask, ctx: EvalContext, attempts: int) -> dict[str, Any]:
    """Run `attempts` attempts at one task, judge them as the App does, grade; the report's record (never a raise)."""
    started = time.monotonic()
    group = uuid.uuid4().hex[:12]
    record: dict[str, Any] = {"instance_id": task.instance_id, "repo": task.repo, "run_id": group}
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-eval-{group}-") as name:
        tmp = Path(name)
        try:
            done = attempted(EvalDriver(task, ctx, group, attempts, partial(attempt_trajectory, ctx, task)), tmp)
        except GitError as exc:
            return record | error_record(exc, started)
        judgement = done.judgement
        record["verify_seconds"] = round(done.judge_seconds, 1)
        began = time.monotonic()
        grades = {
            c.index: grade_patch(task, ctx, c.change.diff, f"{c.run_id}-grade", tmp)
            for c in judgement.candidates
            if c.change is not None and c.submitted and not ctx.cancel.is_set()
        }
        record["grade_seconds"] = since(began)
    rows = [_row(run, judgement.choice, grades.get(run.candidate.index)) for run in judgement.attempts]
    _annotate(task, ctx, rows)
    return record | _summary(rows, judgement.choice, grades) | {"seconds": since(started)}


def attempt_trajectory(ctx: EvalContext, task: EvalTask, index: int) -> Path:
    """Where attempt `index` of a task writes its own trajectory."""
    return ctx.trajectory_path(task).with_name(f"{task.instance_id}.attempt-{index}.traj.json")


def _row(run: Attempt, choice: Choice, graded: Grade | None) -> dict[str, Any]:
    """One attempt in the report: the engine's statistics and the judge's verdicts."""
    c, rep, stats = run.candidate, run.candidate.reproduction, attempt_stats(run)
    return {
        "index": c.index,
        "run_id": c.run_id,
        "temperature": c.temperature,
        **{k: stats.get(k, 0) for k in TOTALS},
        "exit_status": stats["exit_status"],
        **({"error": stats["error"]} if "error" in stats else {}),
        "seconds": round(run.seconds, 1),
        "lines_changed": c.lines_changed,
        "refused": c.refused,
        "test": None if c.test is None else {k: c.test.get(k) for k in ("passed", "returncode", "verdict", "summary")},
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
