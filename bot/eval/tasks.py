"""Eval tasks: SWE-bench's instance format plus what a locally run task needs (git, test_cmd, setup, image)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.repo_config.schema import RepoConfig

DEFAULT_TEST_CMD = "python3 -m unittest {tests}"
INSTANCE_ID = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$"


class EvalTask(BaseModel):
    """One task; unknown SWE-bench fields (version, hints_text, created_at, ...) are kept but unused."""

    model_config = ConfigDict(extra="allow")

    instance_id: str = Field(pattern=INSTANCE_ID)
    """Unique id; also the name of the task's trajectory file."""
    repo: str = ""
    """`owner/name`, for reports and export metadata."""
    base_commit: str = Field(min_length=4)
    """The commit the agent starts from."""
    problem_statement: str
    """The issue text the agent is given."""
    test_patch: str = ""
    """Unified diff adding or changing the tests; applied only when grading."""
    FAIL_TO_PASS: list[str] = []
    """Tests that fail before the fix and must pass after it."""
    PASS_TO_PASS: list[str] = []
    """Tests that pass before and must still pass after."""
    git: str
    """Path or URL of a git repository that holds base_commit."""
    test_cmd: str = DEFAULT_TEST_CMD
    """Runs the named tests; `{tests}` becomes the test ids, shell-quoted, space-separated."""
    setup: list[str] = []
    """Commands run in the sandbox before the agent (as `setup` in .github/mini-fix.yml)."""
    setup_network: bool = False
    """Give the setup commands a network; it is cut before the agent (or the tests) start."""
    image: str | None = None
    """Sandbox image; None = the deployment's."""
    test: str | None = None
    """The repository's own test command (`test` in .github/mini-fix.yml): with `--attempts`, part of the choice."""
    reproduce: str | None = None
    """Runs some test files, `{files}` = their paths (`reproduce` in .github/mini-fix.yml); None = from `test`."""

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """SWE-bench stores these lists as JSON-encoded strings; accept both."""
        return json.loads(value) if isinstance(value, str) else value

    def repo_config(self) -> RepoConfig:
        """The task seen as a repository's config: its setup, image and test commands."""
        return RepoConfig(
            setup=self.setup,
            setup_network=self.setup_network,
            image=self.image,
            test=self.test,
            reproduce=self.reproduce,
        )

    def as_json(self) -> dict[str, Any]:
        """The task as written to a tasks file (JSON lists, not strings)."""
        return self.model_dump(mode="json", exclude_none=True)


class TaskError(Exception):
    """A tasks file or one of its lines cannot be used; the message says where and why."""


def load_tasks(path: Path) -> tuple[list[EvalTask], list[tuple[str, str]]]:
    """Tasks from a JSONL file or a directory of them; and (where, why) for each line that is not a task."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise TaskError(f"{path}: no tasks file (a .jsonl file, or a directory holding some)")
    tasks: list[EvalTask] = []
    bad: list[tuple[str, str]] = []
    seen: set[str] = set()
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{file}:{number}"
            try:
                task = EvalTask.model_validate_json(line)
            except (ValidationError, ValueError) as exc:
                bad.append((where, _first_error(exc)))
                continue
            if task.instance_id in seen:
                bad.append((where, f"duplicate instance_id {task.instance_id!r}"))
                continue
            seen.add(task.instance_id)
            tasks.append(task)
    return tasks, bad


def write_tasks(path: Path, tasks: list[EvalTask]) -> None:
    """Write tasks as JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t.as_json()) + "\n" for t in tasks), encoding="utf-8")


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "line"
        return f"{where}: {first['msg']}"
    return str(exc).splitlines()[0]
