"""The App's own runs for export: trajectories from the deployment's store, joined to their jobs and PR outcomes.

The store is the one the viewer reads (PostgreSQL on a scaled-out deployment, so an export on any host sees every
worker's runs; the data directory's files on one host)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from bot.jobs import Job
from bot.ledger.pr_outcomes import issue_key, pull_of, retry_counts
from bot.trajectory import parse_trajectory
from bot.trajectory_store import TrajectoryStore

RUN_SCAN_LIMIT = 1_000_000
Outcomes = Mapping[tuple[str, int], Mapping[str, Any]]


def app_trajectories(
    store: TrajectoryStore, jobs: list[Job], pr_outcomes: Outcomes
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(trajectory, metadata) of each finished App run, with its job's status and its PR's outcome."""
    by_run = {job.run_id: job for job in jobs if job.run_id}
    by_id = {job.id: job for job in jobs}
    retries = retry_counts(jobs)
    for run_id in sorted(store.recent(RUN_SCAN_LIMIT)):
        text = store.load(run_id)
        try:
            trajectory = parse_trajectory(text or "", run_id)
        except ValueError:  # gone since it was listed, or not a trajectory
            continue
        if not trajectory.get("mini_fix", {}).get("finished_at"):
            continue  # still running (or its worker died mid-run): not a finished example
        mini_fix = trajectory.get("mini_fix", {})
        test = mini_fix.get("test") or {}
        meta = {"source": "app", "tests_passed": test.get("passed") if test else None, "tests": test}
        if (job := by_run.get(run_id)) is not None:  # the job's published run (its chosen attempt)
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
        "retries": retries.get(issue_key(job), 0),
        "pr_url": job.pr_url,
        "pr": pr,
        "outcome": "merged" if pr.get("merged") else pr.get("state") or str(job.status),
    }
