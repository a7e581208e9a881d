"""The closed mini-fix PRs the metrics count, each with the model of the run that opened it (cached per run)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

from bot.forge_ids import GITLAB_KEY, is_mr
from bot.ledger.contract import Ledger
from bot.ledger.pr_outcomes import pull_of
from bot.trajectory_store import TrajectoryStore

JOB_SCAN = 5000  # newest jobs searched for the run behind each PR
JOBS_TTL = 60.0  # seconds the PR -> run map is reused between scrapes


class ClosedPrSource:
    """Callable for metrics.watch_pr_outcomes: (repo, model, merged, after a human push) per closed PR."""

    def __init__(self, ledger: Ledger, store: TrajectoryStore) -> None:
        self.ledger, self.store = ledger, store
        self._models: dict[str, str] = {}
        self._runs: dict[tuple[str, int], str] = {}
        self._read_at = float("-inf")
        self._lock = threading.Lock()

    def __call__(self) -> Iterator[tuple[str, str, bool, bool]]:
        outcomes = self.ledger.pr_outcomes()
        runs = self._pr_runs()
        for (repo, pull), outcome in outcomes.items():
            if outcome["state"] in ("merged", "closed") and (repo, pull) in runs:  # only rows joined to a job
                model = self._model(runs[(repo, pull)])
                yield _label(repo, pull), model, bool(outcome["merged"]), outcome["human_pushes"] > 0

    def _pr_runs(self) -> dict[tuple[str, int], str]:
        with self._lock:
            if time.monotonic() - self._read_at > JOBS_TTL:
                runs: dict[tuple[str, int], str] = {}
                for job in reversed(self.ledger.list(limit=JOB_SCAN)):  # oldest first: the newest run wins
                    if (pull := pull_of(job.pr_url)) is not None:
                        runs[(job.repo, pull)] = job.run_id or ""
                self._runs, self._read_at = runs, time.monotonic()
            return self._runs

    def _model(self, run_id: str) -> str:
        if not run_id:
            return "unknown"
        return self._models.get(run_id) or self._read_model(run_id)

    def _read_model(self, run_id: str) -> str:
        try:
            text = self.store.load(run_id)
        except Exception:  # the database is down: this scrape says unknown, the next one asks again
            return "unknown"
        model = _trajectory_model(text)
        if text is not None:
            self._models[run_id] = model
        return model


def _label(repo: str, pull: int) -> str:
    """The `repo` label of a PR's series: a GitLab merge request's (its number above every GitHub PR's) is its
    project's `gitlab:group/project`, so a GitHub repository and a GitLab project of one path count apart."""
    return GITLAB_KEY + repo if is_mr(pull) else repo


def _trajectory_model(text: str | None) -> str:
    if text is None:
        return "unknown"
    try:
        data = json.loads(text)
        model = data.get("mini_fix", {}).get("model") or data["info"]["config"]["model"]["model_name"]
        return str(model or "unknown")
    except (ValueError, KeyError, TypeError, AttributeError):
        return "unknown"
