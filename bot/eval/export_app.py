"""The App's own runs for export: trajectories in the data directory, joined to their jobs and PR outcomes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bot.jobs import Job
from bot.trajectory import load_trajectory

RUN_SCAN_LIMIT = 1_000_000


def app_trajectories(
    runs_dir: Path, jobs: list[Job], pr_outcomes: Mapping[str, Mapping[str, Any]]
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(trajectory, metadata) of each finished App run, with its job's status and its PR's outcome."""
    by_run = {job.run_id: job for job in jobs if job.run_id}
    for path in sorted(runs_dir.glob("*/trajectory.json")):
        try:
            trajectory = load_trajectory(path)
        except ValueError:
            continue
        if not trajectory.get("mini_fix", {}).get("finished_at"):
            continue  # still running (or its worker died mid-run): not a finished example
        job = by_run.get(path.parent.name)
        test = trajectory.get("mini_fix", {}).get("test") or {}
        pr = dict(pr_outcomes.get(job.pr_url, {})) if job and job.pr_url else {}
        yield (
            trajectory,
            {
                "source": "app",
                "job_status": str(job.status) if job else None,
                "kind": str(job.kind) if job else None,
                "pr_url": job.pr_url if job else None,
                "pr": pr,
                "outcome": "merged" if pr.get("merged") else pr.get("state") or (str(job.status) if job else None),
                "tests_passed": test.get("passed") if test else None,
                "tests": test,
            },
        )
