"""Candidate tasks in a repository's history: first-parent commits that change both tests and code.

A PR merge commit (two parents) is a candidate as a whole: its diff against its first parent (the branch it
merged into), and the messages of the commits it merged are searched for the issue it fixes. Test files are
those the judge's `test_paths` presets name in any language (`bot/repo_config/infer.py`), besides the test
directories and Python/JS/Go test module names below.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bot.pipeline.git.gitops import GitError
from bot.pipeline.git.hostgit import END, commit_parts, diff_in, git
from bot.pipeline.git.quarantine import quarantined
from bot.pipeline.judge import reproduce
from bot.repo_config.infer import TEST_PATHS

TEST_DIRS = {"test", "tests", "testing"}
TEST_FILES = ("test_*.py", "*_test.py", "*_tests.py", "conftest.py", "*.test.js", "*.spec.js", "*_test.go")
NOT_CODE_SUFFIXES = {".md", ".rst", ".txt", ".adoc"}
NOT_CODE_NAMES = ("README*", "CHANGELOG*", "CHANGES*", "NEWS*", "LICENSE*", "AUTHORS*", ".gitignore")
_LINKED = re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s+#(\d+)\b", re.IGNORECASE)
_ANY_REF = re.compile(r"(?<![\w&])#(\d+)\b")
# Every language's `test_paths` preset: a Go, Rust, JavaScript or Java test file is a test change too.
ALL_TEST_PATHS = sorted({glob for globs in TEST_PATHS.values() for glob in globs})
MAX_MERGED = 100  # merged commits whose messages are searched for the linked issue


@dataclass
class Candidate:
    """A commit that changes tests and code: its test part, its code part (the reference fix) and its text."""

    sha: str
    parent: str
    message: str
    test_patch: str
    patch: str
    test_files: tuple[str, ...] = ()
    refs: str = ""
    """Where the linked issue is looked for besides `message`: the messages of the commits a merge merged."""

    @property
    def subject(self) -> str:
        """The commit message's first line."""
        return self.message.splitlines()[0] if self.message else ""


def is_test_path(path: str) -> bool:
    """A test file: under a test directory, or named like a test module."""
    pure = PurePosixPath(path)
    if TEST_DIRS & set(pure.parts[:-1]) or any(fnmatch.fnmatch(pure.name, g) for g in TEST_FILES):
        return True
    return reproduce.matches(path, ALL_TEST_PATHS)


def is_code_path(path: str) -> bool:
    """Neither a test nor documentation."""
    pure = PurePosixPath(path)
    if is_test_path(path) or pure.suffix.lower() in NOT_CODE_SUFFIXES or "docs" in pure.parts[:-1]:
        return False
    return not any(fnmatch.fnmatch(pure.name, g) for g in NOT_CODE_NAMES)


def scan(repo: Path, rev: str, max_commits: int) -> tuple[list[Candidate], dict[str, int]]:
    """Candidates among the last `max_commits` first-parent commits of `rev`, and why the others are not; the
    repository is read through a quarantine, so nothing in its own config runs."""
    with quarantined(repo) as git_dir:
        return _scan(git_dir, rev, max_commits)


def _scan(git_dir: Path, rev: str, max_commits: int) -> tuple[list[Candidate], dict[str, int]]:
    skipped = {"root commit": 0, "no test change": 0, "no code change": 0}
    found: list[Candidate] = []
    listed = git(["rev-list", "--first-parent", f"--max-count={max_commits}", END, rev, "--"], git_dir=git_dir)
    for sha in listed.split():
        try:
            parents, message = commit_parts(git_dir, sha)
        except GitError:
            skipped["malformed commit"] = skipped.get("malformed commit", 0) + 1
            continue
        if not parents:
            skipped["root commit"] += 1
            continue
        if len(parents) > 2:
            skipped["octopus merge"] = skipped.get("octopus merge", 0) + 1
            continue
        names = git(["diff-tree", "--no-commit-id", "--name-only", "-r", "-z", END, parents[0], sha], git_dir=git_dir)
        changed = [p for p in names.split("\0") if p]
        tests, code = [p for p in changed if is_test_path(p)], [p for p in changed if is_code_path(p)]
        if not tests or not code:
            skipped["no test change" if not tests else "no code change"] += 1
            continue
        others = [p for p in changed if not is_test_path(p)]
        test_patch, patch = diff_in(git_dir, parents[0], sha, tests), diff_in(git_dir, parents[0], sha, others)
        refs = _merged_messages(git_dir, parents[0], parents[1]) if len(parents) == 2 else ""
        found.append(Candidate(sha, parents[0], message.strip(), test_patch, patch, tuple(tests), refs))
    return found, skipped


def _merged_messages(git_dir: Path, base: str, merged: str) -> str:
    """The messages of the commits a merge brought in (`base..merged`; both checked object names)."""
    out = git(["log", "--format=%B", f"--max-count={MAX_MERGED}", END, merged, f"^{base}", "--"], git_dir=git_dir)
    return out.strip()


def load_issues(path: Path | None) -> dict[int, str]:
    """Issue texts by number from a JSON file: a list of {number, title, body} (`gh issue list --json ...`)."""
    if path is None:
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    items = data.values() if isinstance(data, dict) else data
    return {int(i["number"]): f"{i.get('title', '')}\n\n{i.get('body') or ''}".strip() for i in items}


def linked_issue(text: str, issues: dict[int, str]) -> tuple[str, int] | None:
    """The text and number of the issue `text` (commit messages) names that `issues` holds (closing keywords
    first); None when it names none of them. The commit message itself is never a problem statement: it names
    the fix."""
    for pattern in (_LINKED, _ANY_REF):
        for match in pattern.finditer(text):
            number = int(match.group(1))
            if number in issues:
                return issues[number], number
    return None
