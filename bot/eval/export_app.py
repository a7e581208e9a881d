"""The App's own runs for export: trajectories in the data directory, joined to their jobs and PR outcomes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bot.jobs import Job
from bot.ledger.pr_outcomes import pull_of, retry_counts
from bot.trajectory import load_trajectory

RUN_SCAN_LIMIT = 1_000_000
Outcomes = Mapping[tuple[str, int], Mapping[str, Any]]


def app_trajectories(
    runs_dir: Path, jobs: list[Job], pr_outcomes: Outcomes
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(trajectory, metadata) of each finished App run, with its job's status and its PR's outcome."""
    by_run = {job.run_id: job for job in jobs if job.run_id}
    by_id = {job.id: job for job in jobs}
    retries = retry_counts(jobs)
    for path in sorted(runs_dir.glob("*/trajectory.json")):
        try:
            trajectory = load_trajectory(path)
        except ValueError:
            continue
        if not trajectory.get("mini_fix", {}).get("finished_at"):
            continue  # still running (or its worker died mid-run): not a finished example
        mini_fix = trajectory.get("mini_fix", {})
        test = mini_fix.get("test") or {}
        meta = {"source": "app", "tests_passed": test.get("passed") if test else None, "tests": test}
        if (job := by_run.get(path.parent.name)) is not None:  # the job's published run (its chosen attempt)
            yield trajectory, meta | _job_meta(job, pr_outcomes, retries)
        elif (job := by_id.get(str(mini_fix.get("job_id")))) is not None:  # an attempt the App did not choose
            yield trajectory, meta | _job_meta(job, pr_outcomes, retries) | {"outcome": "not_chosen"}
        else:
            yield trajectory, meta | {"outcome": None}


def _job_meta(job: Job, pr_outcomes: Outcomes, retries: dict[tuple[str, int], int]) -> dict[str, Any]:
    """The run's job (status, kind, retry guidance, how many retries its issue had) and its PR's outcome."""
    pull = pull_of(job.pr_url)
    pr = dict(pr_outcomes.get((job.repo, pull), {})) if pull is not None else {}
    return {
        "job_status": str(job.status),
        "kind": str(job.kind),
        "guidance": job.guidance,
        "retries": retries.get((job.repo, job.issue), 0),
        "pr_url": job.pr_url,
        "pr": pr,
        "outcome": "merged" if pr.get("merged") else pr.get("state") or str(job.status),
    }
