"""Verification trees on the worker: clones of the base, parts of a diff, files copied without following links."""

from __future__ import annotations

import os
from pathlib import Path

from bot.pipeline.git.hostgit import base_checkout
from bot.pipeline.judge import trees
from tests.support.candidates import FIX, REPRO, calc_base, candidate


def test_a_tree_takes_only_the_named_parts_of_a_diff_even_from_a_checkout_without_refs(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    change = candidate(base, 1, FIX, REPRO).change
    assert change is not None
    detached = tmp_path / "detached"  # as eval's checkouts are: detached HEAD, no refs, no remote
    base_checkout(str(base), "HEAD", detached)
    tree = tmp_path / "tree"
    trees.base_tree(detached, tree)
    trees.apply(tree, change.diff, only=["tests/test_add.py"])
    assert (tree / "tests/test_add.py").read_text() == REPRO[1]
    assert "return a - b" in (tree / "calc/ops.py").read_text()
    trees.apply(tree, change.diff, only=[])  # nothing named: nothing applied
    assert "return a - b" in (tree / "calc/ops.py").read_text()


def test_links_are_never_files_and_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "host-secret"
    outside.write_text("key")
    source, dest = tmp_path / "source", tmp_path / "dest"
    (source / "tests").mkdir(parents=True)
    (dest / "tests").mkdir(parents=True)
    (source / "tests/test_ok.py").write_text("ok")
    (source / "tests/test_link.py").symlink_to(outside)
    os.symlink(outside, source / "tests/escape")
    (dest / "out").symlink_to(tmp_path)
    assert trees.present(source, "tests/test_ok.py") and not trees.present(source, "tests/test_link.py")
    copied = trees.overlay(source, dest, ["tests/test_ok.py", "tests/test_link.py", "tests/escape", "missing.py"])
    assert copied == ["tests/test_ok.py"] and (dest / "tests/test_ok.py").read_text() == "ok"
    (source / "out").mkdir()
    (source / "out/test_x.py").write_text("x")
    assert trees.overlay(source, dest, ["out/test_x.py"]) == []  # dest's `out` links out of the tree
    assert not (tmp_path / "test_x.py").exists()
