"""git on the host for eval: checkouts at a base commit with no later history, patches, a commit's parts.

Every command runs under a fixed configuration (no global or system config, no prompts), so nothing in the
operator's or the repository's settings changes what a patch or a diff means. A repository given by path is only
read through `quarantine` (a git directory of ours over its objects), so its own `.git/config` never applies.
"""

from __future__ import annotations

import re
from pathlib import Path

from bot.pipeline.git.gitops import GitError, git_bytes
from bot.pipeline.git.quarantine import quarantined

END = "--end-of-options"
"""Before every value read from a repository or a task file (a revision, an object name): git never takes it
for an option (`--output=FILE` would write a host file)."""
OBJECT_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_TREE = re.compile(r"tree (?:[0-9a-f]{40}|[0-9a-f]{64})")


def git(
    args: list[str],
    *,
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout: float = 600,
    git_dir: Path | None = None,
) -> str:
    """Run git under the worker's hardened configuration (in `git_dir` when given); raise GitError."""
    env = {"GIT_DIR": str(git_dir)} if git_dir else None
    out = git_bytes(args, cwd=cwd or git_dir, what=f"git {args[0]}", stdin=stdin, timeout=timeout, env=env)
    return out.decode("utf-8", "surrogateescape")


def _local_path(source: str) -> Path | None:
    """The directory a clone source names, when it is one on this machine (a path or a file:// URL)."""
    path = Path(source.removeprefix("file://")) if "://" not in source or source.startswith("file://") else None
    return path if path is not None and path.exists() else None


def clone_bare_safely(source: str, dest: Path, *args: str) -> None:
    """`git clone` of `source` into `dest`; a local repository is read through a quarantine over the pack
    protocol (`--no-local`), so neither its config nor its object store (alternates, links) comes along."""
    local = _local_path(source)
    if local is None:
        git(["clone", "--quiet", *args, "--", source, str(dest)])
        return
    with quarantined(local) as shim:
        git(["clone", "--quiet", "--no-local", *args, "--", str(shim), str(dest)])


def base_checkout(source: str, commit: str, dest: Path) -> str:
    """Clone `source` into `dest` at `commit`, keeping only the history `commit` reaches; return its full sha."""
    clone_bare_safely(source, dest, "--no-checkout")
    try:
        sha = git(["rev-parse", "--verify", "--quiet", END, f"{commit}^{{commit}}"], cwd=dest).strip()
    except GitError:
        raise GitError(f"base commit {commit} is not in {source}") from None
    if not OBJECT_NAME.fullmatch(sha):  # `checkout --detach` takes no --end-of-options: only an object name
        raise GitError(f"base commit {commit} is not in {source}")
    git(["checkout", "--quiet", "--detach", sha], cwd=dest)
    for ref in git(["for-each-ref", "--format=%(refname)"], cwd=dest).split():
        git(["update-ref", "-d", END, ref], cwd=dest)
    git(["remote", "remove", "origin"], cwd=dest)
    git(["reflog", "expire", "--expire=now", "--all"], cwd=dest)
    git(["gc", "--quiet", "--prune=now"], cwd=dest)  # later commits must not be in the objects either
    return sha


def apply_patch(repo: Path, patch: str, what: str) -> None:
    """Apply a unified or binary diff to the working tree; GitError says which patch did not apply."""
    if not patch.strip():
        return
    try:
        git(["apply", "--binary", "--whitespace=nowarn", "-"], cwd=repo, stdin=patch)
    except GitError as exc:
        raise GitError(f"{what} does not apply: {exc}") from None


def diff(repo: Path, old: str, new: str, paths: list[str]) -> str:
    """`git diff --binary old new -- paths` (every path when `paths` is empty), read through a quarantine."""
    with quarantined(repo) as git_dir:
        return diff_in(git_dir, old, new, paths)


def diff_in(git_dir: Path, old: str, new: str, paths: list[str]) -> str:
    """`diff` in a git directory of ours (a quarantine)."""
    flags = ["--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--full-index"]
    return git(["diff", *flags, END, old, new, "--", *paths], git_dir=git_dir)


def commit_parts(git_dir: Path, sha: str) -> tuple[list[str], str]:
    """A commit's parents and message from its raw object (`cat-file`: no signature check, no pretty-printing).

    Parsed as git does: `tree`, then only `parent` lines, then `author`; a `parent` line anywhere later is any
    other header and not a parent. Each parent must be a full object name (40 or 64 hex digits), so nothing a
    repository wrote reaches a later git command line as an option. GitError when the header is not that."""
    raw = git(["cat-file", "commit", END, sha], git_dir=git_dir)
    header, _, message = raw.partition("\n\n")
    lines = header.split("\n")
    if not lines or not _TREE.fullmatch(lines[0]):
        raise GitError(f"malformed commit {sha}: no tree line first")
    parents: list[str] = []
    rest = lines[1:]
    while rest and rest[0].startswith("parent "):
        parent = rest.pop(0).removeprefix("parent ")
        if not OBJECT_NAME.fullmatch(parent):
            raise GitError(f"malformed commit {sha}: parent {parent[:80]!r} is not an object name")
        parents.append(parent)
    if not rest or not rest[0].startswith("author "):
        raise GitError(f"malformed commit {sha}: no author after the parents")
    return parents, message
