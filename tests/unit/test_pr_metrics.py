"""The closed-PR metrics name each PR's model from its run's trajectory, read through the trajectory store."""

from __future__ import annotations

import json
from pathlib import Path

from bot.forge_ids import installation_of, mr_number
from bot.jobs import Job, JobKind, JobStatus
from bot.trajectory_store import LocalTrajectories
from bot.web.pr_metrics import ClosedPrSource


class _Ledger:
    def pr_outcomes(self) -> dict[tuple[str, int], dict[str, object]]:
        return {
            ("o/a", 5): {"state": "merged", "merged": True, "human_pushes": 1},
            ("o/a", 6): {"state": "open", "merged": False, "human_pushes": 0},
        }

    def list(self, limit: int) -> list[Job]:
        return [
            Job("j5", JobKind.FIX, 1, "o/a", 1, "ada", "d5", JobStatus.SUCCEEDED,
                pr_url="https://github.com/o/a/pull/5", run_id="r5"),
            Job("j6", JobKind.FIX, 1, "o/a", 2, "ada", "d6", JobStatus.SUCCEEDED,
                pr_url="https://github.com/o/a/pull/6", run_id="r6"),
        ]  # fmt: skip


def test_a_trajectory_that_shows_up_later_is_read_then(tmp_path: Path) -> None:
    source = ClosedPrSource(_Ledger(), LocalTrajectories(tmp_path))  # type: ignore[arg-type]
    assert list(source()) == [("o/a", "unknown", True, True)]  # no trajectory yet (another host, not yet stored)
    (tmp_path / "r5").mkdir()
    (tmp_path / "r5" / "trajectory.json").write_text(json.dumps({"messages": [], "mini_fix": {"model": "m1"}}))
    assert list(source()) == [("o/a", "m1", True, True)]  # only closed PRs count, the open one does not


def test_a_trajectory_that_is_not_one_counts_as_unknown(tmp_path: Path) -> None:
    (tmp_path / "r5").mkdir()
    (tmp_path / "r5" / "trajectory.json").write_text("[1, 2]")
    source = ClosedPrSource(_Ledger(), LocalTrajectories(tmp_path))  # type: ignore[arg-type]
    assert list(source()) == [("o/a", "unknown", True, True)]


class _TwoForges:
    """`o/a` on GitHub (PR #5) and a GitLab project `o/a` (merge request !5), both merged."""

    def pr_outcomes(self) -> dict[tuple[str, int], dict[str, object]]:
        merged = {"state": "merged", "merged": True, "human_pushes": 0}
        return {("o/a", 5): merged, ("o/a", mr_number(5)): merged}

    def list(self, limit: int) -> list[Job]:
        return [
            Job("j5", JobKind.FIX, 1, "o/a", 1, "ada", "d5", JobStatus.SUCCEEDED,
                pr_url="https://github.com/o/a/pull/5", run_id="r5"),
            Job("m5", JobKind.FIX, installation_of("o/a"), "o/a", 1, "ada", "dm5", JobStatus.SUCCEEDED,
                pr_url="https://gitlab.example/o/a/-/merge_requests/5", run_id="m5"),
        ]  # fmt: skip


def test_a_gitlab_projects_prs_are_counted_apart_from_the_github_repository_of_its_path(tmp_path: Path) -> None:
    source = ClosedPrSource(_TwoForges(), LocalTrajectories(tmp_path))  # type: ignore[arg-type]
    assert sorted(source()) == [("gitlab:o/a", "unknown", True, False), ("o/a", "unknown", True, False)]
