"""The agent's change, computed on the worker: the sandbox's tree taken out as files, diffed by the worker's git.

Nothing the sandbox says is used: its `.git` (whose config the agent owns) is never exported, and the diff, the
path list and the link check come from the worker's own clone under the hardened configuration in `gitops`.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bot.pipeline.errors import ChangeTooLarge
from bot.pipeline.git import gitops

LINK_MODES = {"120000": "symlink", "160000": "gitlink"}
SUBMODULES_FILE = ".gitmodules"
DIFF_FLAGS = ("--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/")


@dataclass(frozen=True)
class ChangeCaps:
    """What an attempt's tree may cost the worker (the operator's MINIFIX_MAX_CHANGED_FILES / _BYTES)."""

    files: int = 10_000
    bytes: int = 64 << 20


@dataclass(frozen=True)
class Change:
    """What the agent changed, as the worker's git sees it."""

    diff: str
    paths: list[str]  # every path touched, both sides of a rename (no rename detection)
    links: list[str]  # "path (symlink)", "path (gitlink)", ".gitmodules (submodule)", "x/.git (nested repository)"


def compute_change(checkout: Path, tree: Path, *, exclude: str = "", caps: ChangeCaps | None = None) -> Change:
    """The change from the checkout's HEAD to the exported `tree`, in a throwaway index of the worker's clone;
    ChangeTooLarge, before anything is hashed, when it goes past `caps`."""
    nested = [f"{p} (nested repository)" for p in _nested_git(tree)]
    with tempfile.TemporaryDirectory(prefix="mini-fix-index-") as tmp:
        excludes = Path(tmp) / "exclude"
        excludes.write_text(exclude, encoding="utf-8", errors="surrogateescape")
        env = {"GIT_DIR": str(checkout / ".git"), "GIT_WORK_TREE": str(tree), "GIT_INDEX_FILE": f"{tmp}/index"}
        run = partial(gitops.git_bytes, cwd=tree, env=env)
        run(["read-tree", "HEAD"], what="git read-tree")
        if caps is not None:
            _check_caps(run, tree, excludes, caps)
        run(["-c", f"core.excludesFile={excludes}", "add", "-A", "--", "."], what="git add")
        raw = run(["diff", "--cached", "--raw", "-z", "--no-renames", "--no-ext-diff", "HEAD"], what="git diff --raw")
        diff = run(["diff", "--cached", "--no-renames", *DIFF_FLAGS, "HEAD"], what="git diff")
    paths, links = _parse_raw(raw)
    return Change(diff.decode("utf-8", "surrogateescape"), paths, nested + links)


def _check_caps(run: partial[bytes], tree: Path, excludes: Path, caps: ChangeCaps) -> None:
    """Count what the tree adds (untracked, not excluded), deletes or resizes, from listings and `lstat` alone."""
    others = run(
        ["-c", f"core.excludesFile={excludes}", "ls-files", "-z", "--others", "--exclude-standard"], what="git ls-files"
    )
    added = [p for p in others.split(b"\0") if p]
    files, size = len(added), sum(_size(tree / os.fsdecode(p)) for p in added[: caps.files + 1])
    for entry in filter(None, run(["ls-tree", "-r", "-z", "-l", "HEAD"], what="git ls-tree").split(b"\0")):
        meta, _, name = entry.partition(b"\t")
        was = meta.split()[3]
        now = _size(tree / os.fsdecode(name), missing=-1)
        if now == -1 or not was.isdigit() or now != int(was):
            files, size = files + 1, size + max(now, 0)
    if files > caps.files or size > caps.bytes:
        raise ChangeTooLarge(
            f"the attempt's tree changes {files} files and {size} bytes; this deployment takes at most "
            f"{caps.files} files and {caps.bytes} bytes (MINIFIX_MAX_CHANGED_FILES, MINIFIX_MAX_CHANGED_BYTES)"
        )


def _size(path: Path, missing: int = 0) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return missing


def setup_excludes(listing: str) -> str:
    """Exclude patterns (anchored, literal) for what the setup phase left untracked (`git ls-files -z --others`)."""
    lines = []
    for path in filter(None, listing.split("\0")):
        escaped = "".join("\\" + ch if ch in "*?[]\\!#" else ch for ch in path.strip("\n"))
        lines.append("/" + escaped)
    return "\n".join(lines) + "\n"


def excluded_paths(exclude: str) -> tuple[str, ...]:
    """The paths `setup_excludes` wrote patterns for, as they were listed (a directory ends with `/`)."""
    return tuple(re.sub(r"\\(.)", r"\1", line[1:]) for line in exclude.splitlines() if line.startswith("/"))


def _parse_raw(raw: bytes) -> tuple[list[str], list[str]]:
    """Paths and refused link entries from `git diff --raw -z` (`:old new sha sha status NUL path NUL`)."""
    fields = raw.split(b"\0")
    paths: list[str] = []
    links: list[str] = []
    for meta, name in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        path = name.decode("utf-8", "surrogateescape")
        new_mode = meta[1:].split(b" ")[1].decode()
        paths.append(path)
        if new_mode in LINK_MODES:
            links.append(f"{path} ({LINK_MODES[new_mode]})")
        elif path == SUBMODULES_FILE:
            links.append(f"{path} (submodule)")
    return paths, links


def _nested_git(tree: Path) -> list[str]:
    """Paths of `.git` entries below the top: git would treat their directory as another repository."""
    found = []
    for root, dirs, files in os.walk(tree):
        if ".git" in dirs or ".git" in files:
            found.append(os.path.relpath(os.path.join(root, ".git"), tree))
        dirs[:] = [d for d in dirs if d != ".git"]
    return found
