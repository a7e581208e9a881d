"""Grading: a fresh sandbox holding base commit + model patch + test_patch; resolved iff every named test passes."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.eval.tasks import EvalTask
from bot.pipeline.errors import SetupFailed
from bot.pipeline.git.gitops import GitError
from bot.pipeline.git.hostgit import apply_patch, base_checkout
from bot.pipeline.judge.testbed import SandboxFactory, prepared, run_tests
from sandbox.base import SandboxConfig, SandboxError


@dataclass
class Grade:
    """The verdict on one patch: each named test's result, or why grading could not run."""

    fail_to_pass: dict[str, bool] = field(default_factory=dict)
    pass_to_pass: dict[str, bool] = field(default_factory=dict)
    error: str = ""

    @property
    def resolved(self) -> bool:
        """Both sets ran and every test in them passed (a task with no FAIL_TO_PASS is never resolved)."""
        return (
            not self.error
            and bool(self.fail_to_pass)
            and all(self.fail_to_pass.values())
            and all(self.pass_to_pass.values())
        )

    def as_json(self) -> dict[str, Any]:
        """The report's view: which tests passed and failed in each set."""
        return {
            "FAIL_TO_PASS": _split(self.fail_to_pass),
            "PASS_TO_PASS": _split(self.pass_to_pass),
            **({"error": self.error} if self.error else {}),
        }


def grade(
    task: EvalTask, patch: str, factory: SandboxFactory, config: SandboxConfig, run_id: str, workdir: Path
) -> Grade:
    """Grade `patch` on `task` in a sandbox the agent never touched."""
    with tempfile.TemporaryDirectory(prefix="grade-", dir=workdir) as tmp:
        checkout = Path(tmp) / "repo"
        try:
            base_checkout(task.git, task.base_commit, checkout)
            apply_patch(checkout, patch, "the model patch")
            apply_patch(checkout, task.test_patch, "the test patch")
        except GitError as exc:
            return Grade(error=str(exc))
        try:
            with prepared(factory, config, run_id, checkout, task.repo_config()) as ready:
                return Grade(
                    fail_to_pass=run_tests(ready.sandbox, task.test_cmd, task.FAIL_TO_PASS),
                    pass_to_pass=run_tests(ready.sandbox, task.test_cmd, task.PASS_TO_PASS),
                )
        except (SetupFailed, SandboxError) as exc:
            return Grade(error=f"grading: {exc}")


def _split(results: dict[str, bool]) -> dict[str, list[str]]:
    return {"passed": [t for t, ok in results.items() if ok], "failed": [t for t, ok in results.items() if not ok]}
