"""git on the host for eval: checkouts at a base commit with no later history, patches, a commit's parts.

Every command runs under a fixed configuration (no global or system config, no prompts), so nothing in the
operator's or the repository's settings changes what a patch or a diff means.
"""

from __future__ import annotations

from pathlib import Path

from bot.pipeline.gitops import GitError, git_bytes

GitFailed = GitError
"""A git step failed; the message says which and git's own reason (the worker's own git error)."""


def git(args: list[str], *, cwd: Path | None = None, stdin: str | None = None, timeout: float = 600) -> str:
    """Run git under the worker's hardened configuration; raise GitFailed with git's message."""
    out = git_bytes(args, cwd=cwd, what=f"git {args[0]}", stdin=stdin, timeout=timeout)
    return out.decode("utf-8", "surrogateescape")


def base_checkout(source: str, commit: str, dest: Path) -> str:
    """Clone `source` into `dest` at `commit`, keeping only the history `commit` reaches; return its full sha."""
    git(["clone", "--quiet", "--no-checkout", "--no-hardlinks", "--", source, str(dest)])
    try:
        sha = git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=dest).strip()
    except GitFailed:
        raise GitFailed(f"base commit {commit} is not in {source}") from None
    git(["checkout", "--quiet", "--detach", sha], cwd=dest)
    for ref in git(["for-each-ref", "--format=%(refname)"], cwd=dest).split():
        git(["update-ref", "-d", ref], cwd=dest)
    git(["remote", "remove", "origin"], cwd=dest)
    git(["reflog", "expire", "--expire=now", "--all"], cwd=dest)
    git(["gc", "--quiet", "--prune=now"], cwd=dest)  # later commits must not be in the objects either
    return sha


def apply_patch(repo: Path, patch: str, what: str) -> None:
    """Apply a unified or binary diff to the working tree; GitFailed says which patch did not apply."""
    if not patch.strip():
        return
    try:
        git(["apply", "--binary", "--whitespace=nowarn", "-"], cwd=repo, stdin=patch)
    except GitFailed as exc:
        raise GitFailed(f"{what} does not apply: {exc}") from None


def diff(repo: Path, old: str, new: str, paths: list[str]) -> str:
    """`git diff --binary old new -- paths` (every path when `paths` is empty)."""
    flags = ["--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--full-index"]
    return git(["diff", *flags, old, new, "--", *paths], cwd=repo)
