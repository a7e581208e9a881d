"""An attempt's tree built to be expensive for the worker: refused by count and size before git hashes anything."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.jobs import Outcome
from bot.pipeline import change as change_module
from bot.pipeline.attempts import execute
from bot.pipeline.change import ChangeCaps, compute_change
from bot.pipeline.errors import ChangeTooLarge
from bot.pipeline.git import gitops
from bot.settings import Settings
from tests.support.candidates import calc_base


def _tree(base: Path, where: Path) -> Path:
    shutil.copytree(base, where, ignore=shutil.ignore_patterns(".git"))
    return where


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git subcommands compute_change runs (recorded, then run for real)."""
    seen: list[str] = []
    real = gitops.git_bytes

    def recording(args: Any, **kwargs: Any) -> bytes:
        seen.append(next(a for a in args if not a.startswith("-") and "=" not in a))
        return real(args, **kwargs)

    monkeypatch.setattr(change_module.gitops, "git_bytes", recording)
    return seen


def test_many_small_files_are_refused_before_the_diff(tmp_path: Path, commands: list[str]) -> None:
    base = calc_base(tmp_path)
    tree = _tree(base, tmp_path / "export")
    (tree / "junk").mkdir()
    for n in range(60):
        (tree / "junk" / f"f{n}.txt").write_text("x\n")
    with pytest.raises(ChangeTooLarge, match="changes 60 files") as error:
        compute_change(base, tree, caps=ChangeCaps(files=50, bytes=1 << 20))
    assert "MINIFIX_MAX_CHANGED_FILES" in str(error.value)
    assert "add" not in commands and "diff" not in commands


def test_a_large_file_added_or_grown_is_refused_by_size(tmp_path: Path, commands: list[str]) -> None:
    base = calc_base(tmp_path)
    tree = _tree(base, tmp_path / "export")
    (tree / "calc" / "ops.py").write_bytes(b"#" * (600 << 10))  # a tracked file grown
    with pytest.raises(ChangeTooLarge, match="1 files and 614400 bytes"):
        compute_change(base, tree, caps=ChangeCaps(files=50, bytes=512 << 10))
    assert "add" not in commands


def test_a_deleted_tree_counts_every_file_it_deletes(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    tree = tmp_path / "export"
    tree.mkdir()
    tracked = len(gitops.git_bytes(["ls-files", "-z"], cwd=base, what="ls").split(b"\0")) - 1
    with pytest.raises(ChangeTooLarge, match=f"changes {tracked} files"):
        compute_change(base, tree, caps=ChangeCaps(files=tracked - 1, bytes=1 << 20))


def test_a_change_within_the_caps_is_diffed(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    tree = _tree(base, tmp_path / "export")
    (tree / "NEW.md").write_text("hello\n")
    change = compute_change(base, tree, caps=ChangeCaps(files=1, bytes=6))
    assert change.paths == ["NEW.md"]


def test_the_run_ends_with_the_limits_outcome_and_the_operator_defaults(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    tree = _tree(base, tmp_path / "tree")
    for n in range(3):
        (tree / f"n{n}").write_text("x")

    class Exported:
        def export_tree(self, dest: Path, *, max_bytes: int) -> None:
            shutil.copytree(tree, dest)

    with pytest.raises(execute.RunFailed) as failed:
        execute.take_change(Exported(), base, tmp_path / "out", max_bytes=1 << 30, caps=ChangeCaps(files=2))  # type: ignore[arg-type]
    assert failed.value.outcome == Outcome.LIMITS and "changes 3 files" in str(failed.value)
    defaults = Settings(webhook_secret="x" * 32)
    assert (defaults.max_changed_files, defaults.max_changed_bytes) == (10_000, 64 << 20)
