"""Read a repository someone else made without its own settings: a git directory of ours over its objects and refs.

A repository's `.git/config` cannot be switched off by a flag, and it can name programs git runs (signature
verifiers, fsmonitor, filters, diff drivers, pagers, credential helpers, ssh commands, includes). So git never
opens it: it runs in a directory we build, whose config we wrote, whose objects come from the repository's
object store as an alternate, and whose refs are copies of the repository's (regular files only, no links).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bot.pipeline.git.gitops import GitError, git_bytes

_CONFIG = "[core]\n\trepositoryformatversion = {version}\n\tbare = true\n{extensions}"
MAX_REF_BYTES = 1 << 30  # packed-refs of a very large repository; a cap, not a size anyone reaches


def git_dir_of(repo: Path) -> Path:
    """The git directory of a checkout, a linked worktree or a bare repository, found without running git."""
    dot = repo / ".git"
    if dot.is_dir() and not dot.is_symlink():
        return dot
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            return (repo / text.removeprefix("gitdir:").strip()).resolve()
    if (repo / "HEAD").is_file() and (repo / "objects").is_dir():
        return repo
    raise GitError(f"{repo} is not a git repository")


def _common_dir(git_dir: Path) -> Path:
    """A linked worktree keeps objects and refs in the main repository's directory (its `commondir` file)."""
    pointer = git_dir / "commondir"
    if pointer.is_file() and not pointer.is_symlink():
        return (git_dir / pointer.read_text(encoding="utf-8", errors="replace").strip()).resolve()
    return git_dir


def _copy_file(src: Path, dest: Path) -> None:
    """Copy a regular file (never through a link) into our directory."""
    if src.is_symlink() or not src.is_file() or src.stat().st_size > MAX_REF_BYTES:
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(src.read_bytes())


def _copy_refs(src: Path, dest: Path) -> None:
    """The loose refs under `src/refs`, regular files only: a link could point anywhere on the host."""
    for root, dirs, files in os.walk(src / "refs", followlinks=False):
        here = Path(root)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        for name in files:
            _copy_file(here / name, dest / (here / name).relative_to(src))


def _extension(common: Path, key: str) -> str:
    """One `extensions.*` value of the repository's config, read as a file (no includes, no program)."""
    args = ["config", "--file", str(common / "config"), "--get", f"extensions.{key}"]
    try:
        return git_bytes(args, cwd=common.parent, what="git config").decode("utf-8", "replace").strip()
    except GitError:
        return ""  # unset (exit 1) or no config file: git's defaults


def _config(common: Path) -> str:
    """Our config: bare, and the object format the repository's objects need (the only setting taken over)."""
    if _extension(common, "refstorage") not in ("", "files"):
        raise GitError("the repository keeps its refs in a format this reader does not copy (reftable)")
    fmt = _extension(common, "objectformat")
    if fmt not in ("", "sha1", "sha256"):
        raise GitError(f"unknown object format {fmt!r}")
    extensions = f"[extensions]\n\tobjectformat = {fmt}\n" if fmt == "sha256" else ""
    return _CONFIG.format(version=1 if extensions else 0, extensions=extensions)


def build(repo: Path, dest: Path) -> Path:
    """Make `dest` a bare git directory that reads `repo`'s objects and refs and none of its settings."""
    git_dir = git_dir_of(repo)
    common = _common_dir(git_dir)
    objects = (common / "objects").resolve()
    if not objects.is_dir():
        raise GitError(f"{repo} has no object store")
    (dest / "objects" / "info").mkdir(parents=True)
    (dest / "refs").mkdir()
    (dest / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")
    (dest / "config").write_text(_config(common), encoding="utf-8")
    _copy_refs(common, dest)
    for name in ("packed-refs", "shallow"):
        _copy_file(common / name, dest / name)
    _copy_file(git_dir / "HEAD", dest / "HEAD")
    if not (dest / "HEAD").is_file():
        raise GitError(f"{repo} has no HEAD")
    return dest


@contextmanager
def quarantined(repo: Path) -> Iterator[Path]:
    """A throwaway git directory over `repo` (see `build`), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="mini-fix-quarantine-") as tmp:
        yield build(repo, Path(tmp) / "repo.git")
