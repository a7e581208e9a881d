"""The warnings that hold for a pull request's whole diff against its base, whatever run wrote the body last.

A retry or follow-up builds on the PR branch: its own change is diffed against the PR head, so a test an earlier
commit dropped, or a protected path a person changed on the branch, is not in it. The PR body is about the whole
pull request, so when such a run rewrites it the App compares the branch's new head with its base itself (the
merge base with the default branch, fetched by the worker's git; the default branch's head when a shallow clone
cannot tell) and keeps every warning that still holds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from bot.pipeline.candidates import DroppedTests
from bot.pipeline.git import diffpaths, gitops
from bot.pipeline.git.gitops import GitError
from bot.pipeline.judge import dropped

log = structlog.get_logger()


@dataclass
class WholeDiff:
    """What the App found in the pull request's whole diff: dropped tests and protected paths it changes."""

    base: str
    dropped: DroppedTests = field(default_factory=DroppedTests)
    protected: list[str] = field(default_factory=list)


def merge_base(checkout: Path, base_tip: str) -> str:
    """Where HEAD left `base_tip`'s history; `base_tip` itself when the shallow history does not reach it."""
    try:
        out = gitops.git_bytes(
            ["merge-base", "--end-of-options", base_tip, "HEAD"], cwd=checkout, what="git merge-base"
        )
        return out.decode().strip() or base_tip
    except GitError:
        return base_tip


def changed_paths(checkout: Path, base: str) -> list[str]:
    """Every path that differs between `base` and HEAD (both sides of a rename)."""
    out = gitops.git_bytes(
        ["diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--end-of-options", base, "HEAD", "--"],
        cwd=checkout,
        what="git diff",
    )
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def whole_diff(
    checkout: Path,
    base_tip: str,
    *,
    test_paths: list[str],
    protected_globs: list[str],
    cancel: threading.Event | None = None,
) -> WholeDiff:
    """The warnings for HEAD's whole diff against its merge base with `base_tip`; the checkout's working tree
    must be HEAD's tree (the worker's own clone, just committed)."""
    base = merge_base(checkout, base_tip)
    paths = changed_paths(checkout, base)
    found = WholeDiff(base)
    found.protected = diffpaths.protected(paths, protected_globs)
    found.dropped = dropped.dropped_tests(checkout, checkout, paths, test_paths, cancel, base=base)
    return found
