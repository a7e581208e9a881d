"""Trees for verification, built on the worker by its own git: the base commit, plus all or part of a change.

The change is the host's own diff (`change.py`), never anything the sandbox says; the trees are then copied into
fresh sandboxes. Files are only ever read from inside a tree, never through a link out of it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bot.pipeline.git import gitops

_GLOB_SPECIALS = "*?[]\\"


def base_tree(checkout: Path, dest: Path) -> None:
    """A clone of `checkout` in `dest`, at its HEAD (the base commit), with no remote: the checkout is only read."""
    sha = gitops.git_bytes(["rev-parse", "--verify", "HEAD^{commit}"], cwd=checkout, what="git rev-parse").strip()
    gitops.git_bytes(["clone", "--quiet", "--no-checkout", "--", str(checkout), str(dest)], what="git clone")
    gitops.git_bytes(["checkout", "--quiet", "--detach", sha.decode()], cwd=dest, what="git checkout")
    gitops.git_bytes(["remote", "remove", "origin"], cwd=dest, what="git remote")


def apply(tree: Path, diff: str, *, only: list[str] | None = None) -> None:
    """Apply the host's diff to the working tree; with `only`, just the parts touching those paths."""
    include = [f"--include={_literal(path)}" for path in only or []]
    if only is not None and not include:
        return
    args = ["apply", "--binary", "--whitespace=nowarn", *include, "-"]
    gitops.git_bytes(args, cwd=tree, stdin=diff, what="git apply")


def present(tree: Path, path: str) -> bool:
    """Whether `path` is a regular file inside `tree`, reached through no link (so not deleted, not a link)."""
    target = tree / path
    if target.is_symlink() or not target.is_file():
        return False
    return _inside(tree, target)


def overlay(source: Path, dest: Path, paths: list[str]) -> list[str]:
    """Copy `paths` from `source` over `dest` (regular files only, no link followed); the paths copied."""
    copied = []
    for path in paths:
        target = dest / path
        if not present(source, path) or target.is_symlink() or not _inside(dest, target.parent):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / path, target, follow_symlinks=False)
        os.chmod(target, (source / path).lstat().st_mode & 0o777)
        copied.append(path)
    return copied


def _inside(root: Path, path: Path) -> bool:
    real_root = os.path.realpath(root)
    return os.path.commonpath([real_root, os.path.realpath(path)]) == real_root


def _literal(path: str) -> str:
    """A path as a `git apply --include` pattern that matches only itself."""
    return "".join("\\" + ch if ch in _GLOB_SPECIALS else ch for ch in path)


def files(root: Path) -> set[str]:
    """Every non-directory entry under `root` (links included, not followed), `.git` left out."""
    found: set[str] = set()
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (here == str(root) and d == ".git")]
        rel = os.path.relpath(here, root)
        found.update(name if rel == "." else os.path.join(rel, name) for name in files)
        found.update(os.path.join(rel, d) if rel != "." else d for d in dirs if os.path.islink(os.path.join(here, d)))
    return found
