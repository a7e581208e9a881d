"""Run many eval tasks in parallel, resumably, with a progress line after each one finishes."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from bot.eval.attempts import solve_attempts
from bot.eval.solve import RETRIED_ON_RESUME, EvalContext, solve
from bot.eval.store import ResultStore
from bot.eval.tasks import EvalTask
from bot.pipeline.attempts.setup_cache import RepoSetup, SetupOptions
from bot.trajectory import annotate_trajectory

Print = Callable[[str], None]


@dataclass
class Progress:
    """Counts for the progress line: done/total, resolved so far, an ETA from the mean time per task."""

    total: int
    done: int = 0
    resolved: int = 0
    errors: int = 0
    started: float = field(default_factory=time.monotonic)
    fresh: int = 0  # tasks finished in this process (the ETA's sample)

    def line(self, record: dict[str, Any]) -> str:
        """One line after a task finishes; the ETA is wall time per finished task (so it counts the workers)."""
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.fresh * (self.total - self.done) if self.fresh else 0.0
        return (
            f"[{self.done}/{self.total}] resolved {self.resolved} errors {self.errors} "
            f"elapsed {_clock(elapsed)} ETA {_clock(eta)}  {record['instance_id']}: {verdict(record)}{_choice(record)}"
        )


def _choice(record: dict[str, Any]) -> str:
    """With several attempts: which one was chosen, and whether any would have resolved the task."""
    if "attempts" not in record:
        return ""
    chosen = f"attempt {record['chosen']}" if record.get("chosen") else "no attempt"
    oracle = "yes" if record.get("any_resolved") else "no"
    return f" ({chosen} of {len(record['attempts'])} chosen; any attempt resolved: {oracle})"


def verdict(record: dict[str, Any]) -> str:
    """resolved, unresolved or error."""
    if record.get("exit_status") == "error":
        return "error"
    return "resolved" if record.get("resolved") else "unresolved"


def run_tasks(tasks: list[EvalTask], ctx: EvalContext, store: ResultStore, workers: int, say: Print) -> None:
    """Run every task not finished yet, `workers` at a time; each record is stored as soon as it exists."""
    finished = {i: r for i, r in store.finished().items() if r.get("exit_status") not in RETRIED_ON_RESUME}
    todo = [t for t in tasks if t.instance_id not in finished]
    progress = Progress(total=len(tasks))
    for record in (finished[t.instance_id] for t in tasks if t.instance_id in finished):
        _count(progress, record)
    if finished:
        say(f"resuming: {progress.done} of {len(tasks)} already finished, {len(todo)} to run")
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eval") as pool:
        setup = SetupOptions.from_settings(ctx.settings)  # one setup cache for every task of the eval
        running: dict[Future[dict[str, Any]], EvalTask] = {
            pool.submit(_safe_solve, t, with_setup(ctx, t, setup)): t for t in todo
        }
        try:
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    running.pop(future)
                    record = future.result()
                    _finish(record, ctx, store, progress)
                    say(progress.line(record))
        except BaseException:
            ctx.cancel.set()  # running agents stop at their next step; queued tasks never start
            for future in running:
                future.cancel()
            raise


def with_setup(ctx: EvalContext, task: EvalTask, options: SetupOptions) -> EvalContext:
    """The task's context, its sandboxes carrying its repository's setup (time limit, cache) as the App's do."""
    setup = RepoSetup(task.repo or task.git, options, trust_clean_trees=True)  # the operator's own tasks
    return replace(ctx, sandbox=setup.bind(ctx.sandbox))


def _safe_solve(task: EvalTask, ctx: EvalContext) -> dict[str, Any]:
    """solve(), with anything unforeseen turned into the task's error instead of ending the whole eval."""
    try:
        return solve_attempts(task, ctx, ctx.attempts) if ctx.attempts else solve(task, ctx)
    except Exception as exc:
        detail = traceback.format_exception_only(exc)[-1].strip()
        return {
            "instance_id": task.instance_id,
            "repo": task.repo,
            "resolved": False,
            "exit_status": "error",
            "error": f"internal error: {detail}",
            "model_patch": "",
            "seconds": 0.0,
        }


def _finish(record: dict[str, Any], ctx: EvalContext, store: ResultStore, progress: Progress) -> None:
    if ctx.cancel.is_set() and record.get("exit_status") in (*RETRIED_ON_RESUME, "error"):
        return  # interrupted, not finished: a rerun runs it again
    store.add(record)
    instance = record["instance_id"]
    verdict = {"instance_id": instance, "resolved": record.get("resolved", False), "tests": record.get("tests", {})}
    path = ctx.output / "trajectories" / instance / f"{instance}.traj.json"
    annotate_trajectory(path, "eval", {**verdict, "error": record.get("error", "")})
    progress.fresh += 1
    _count(progress, record)


def _count(progress: Progress, record: dict[str, Any]) -> None:
    progress.done += 1
    progress.resolved += bool(record.get("resolved"))
    progress.errors += record.get("exit_status") == "error"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
