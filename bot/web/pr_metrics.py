"""The closed mini-fix PRs the metrics count, each with the model of the run that opened it (cached per run)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from bot.ledger.contract import Ledger
from bot.ledger.pr_outcomes import pull_of

JOB_SCAN = 5000  # newest jobs searched for the run behind each PR
JOBS_TTL = 60.0  # seconds the PR -> run map is reused between scrapes


class ClosedPrSource:
    """Callable for metrics.watch_pr_outcomes: (repo, model, merged, after a human push) per closed PR."""

    def __init__(self, ledger: Ledger, runs_dir: Path) -> None:
        self.ledger, self.runs_dir = ledger, runs_dir
        self._models: dict[str, str] = {}
        self._runs: dict[tuple[str, int], str] = {}
        self._read_at = float("-inf")
        self._lock = threading.Lock()

    def __call__(self) -> Iterator[tuple[str, str, bool, bool]]:
        outcomes = self.ledger.pr_outcomes()
        runs = self._pr_runs()
        for (repo, pull), outcome in outcomes.items():
            if outcome["state"] in ("merged", "closed"):
                model = self._model(runs.get((repo, pull), ""))
                yield repo, model, bool(outcome["merged"]), outcome["human_pushes"] > 0

    def _pr_runs(self) -> dict[tuple[str, int], str]:
        with self._lock:
            if time.monotonic() - self._read_at > JOBS_TTL:
                runs: dict[tuple[str, int], str] = {}
                for job in reversed(self.ledger.list(limit=JOB_SCAN)):  # oldest first: the newest run wins
                    if job.run_id and (pull := pull_of(job.pr_url)) is not None:
                        runs[(job.repo, pull)] = job.run_id
                self._runs, self._read_at = runs, time.monotonic()
            return self._runs

    def _model(self, run_id: str) -> str:
        if not run_id:
            return "unknown"
        if run_id not in self._models:
            self._models[run_id] = _trajectory_model(self.runs_dir / run_id / "trajectory.json")
        return self._models[run_id]


def _trajectory_model(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = data.get("mini_fix", {}).get("model") or data["info"]["config"]["model"]["model_name"]
        return str(model or "unknown")
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"
