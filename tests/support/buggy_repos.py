"""Small, real-looking Python repositories with one bug each, an issue text, and a hidden check of the fix.

Used by the `realmodel` tests and bench/real_model.py. Each repository is built here from text (no third-party
code), runs its own tests with `python3 -m unittest` (the sandbox image has no pytest), and has a hidden test,
never shown to the model, that passes only when the bug is fixed.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

GIT_USER = ("-c", "user.name=bench", "-c", "user.email=bench@example.com")


@dataclass(frozen=True)
class BuggyRepo:
    """One repository: its files, the issue a user would file, and the hidden test that decides `resolved`."""

    name: str
    issue: str
    files: dict[str, str]
    hidden_test: str


def _readme(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n\nRun the tests with `python3 -m unittest discover -s tests -t .`.\n"


def from_dir(name: str, folder: Path) -> BuggyRepo:
    """A repository shipped as files (`repo/`, `issue.md`, `hidden_test.py`), as the demo's is."""
    files = {
        str(p.relative_to(folder / "repo")): p.read_text() for p in sorted((folder / "repo").rglob("*")) if p.is_file()
    }
    issue = (folder / "issue.md").read_text().strip()
    return BuggyRepo(name=name, issue=issue, files=files, hidden_test=(folder / "hidden_test.py").read_text())


# The demo's repository (scripts/demo.sh), shipped as files so the script needs nothing of the project's code.
DEMO_DIR = Path(__file__).resolve().parents[2] / "scripts" / "demo" / "calc"
CALC = from_dir("calc", DEMO_DIR)

SHOUT = BuggyRepo(
    name="shout",
    issue="`textkit.shout('hello')` returns 'hello!' but it should return 'HELLO!' (upper case, then '!').",
    files={
        "README.md": _readme("textkit", "String helpers for command-line output."),
        "textkit/__init__.py": 'from textkit.case import shout, whisper\n\n__all__ = ["shout", "whisper"]\n',
        "textkit/case.py": (
            '"""Change the case of messages."""\n\n\ndef shout(text):\n    """The text in upper case, with an '
            'exclamation mark."""\n    return text.lower() + "!"\n\n\ndef whisper(text):\n'
            '    """The text in lower case, with an ellipsis."""\n    return text.lower() + "..."\n'
        ),
        "tests/__init__.py": "",
        "tests/test_case.py": (
            "import unittest\n\nfrom textkit import whisper\n\n\nclass WhisperTest(unittest.TestCase):\n"
            "    def test_whisper(self):\n        self.assertEqual(whisper('HI'), 'hi...')\n"
        ),
    },
    hidden_test=(
        "import unittest\n\nfrom textkit import shout\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_shout(self):\n        self.assertEqual(shout('hello'), 'HELLO!')\n"
    ),
)

PAGES = BuggyRepo(
    name="pages",
    issue=(
        "Pages are numbered from 1, but `pager.page(list(range(25)), 1, 10)` returns items 10..19 instead of "
        "0..9, so the first page is skipped."
    ),
    files={
        "README.md": _readme("pager", "Split lists into pages numbered from 1."),
        "pager/__init__.py": 'from pager.core import page, page_count\n\n__all__ = ["page", "page_count"]\n',
        "pager/core.py": (
            '"""Pagination of lists. Page numbers start at 1."""\n\n\ndef page(items, number, size):\n'
            '    """The items on page `number` (1-based) when each page holds `size` items."""\n'
            "    start = number * size\n    return items[start:start + size]\n\n\n"
            'def page_count(items, size):\n    """How many pages `items` fills."""\n'
            "    return (len(items) + size - 1) // size\n"
        ),
        "tests/__init__.py": "",
        "tests/test_core.py": (
            "import unittest\n\nfrom pager import page_count\n\n\nclass CountTest(unittest.TestCase):\n"
            "    def test_count(self):\n        self.assertEqual(page_count(list(range(25)), 10), 3)\n"
        ),
    },
    hidden_test=(
        "import unittest\n\nfrom pager import page\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_pages(self):\n        items = list(range(25))\n"
        "        self.assertEqual(page(items, 1, 10), list(range(10)))\n"
        "        self.assertEqual(page(items, 3, 10), list(range(20, 25)))\n"
    ),
)

MEAN = BuggyRepo(
    name="mean",
    issue=(
        "`stats.mean([])` crashes with ZeroDivisionError. The mean of an empty list should be 0.0; "
        "non-empty lists must keep working."
    ),
    files={
        "README.md": _readme("stats", "Summary statistics for small lists of numbers."),
        "stats/__init__.py": 'from stats.summary import mean, total\n\n__all__ = ["mean", "total"]\n',
        "stats/summary.py": (
            '"""Summaries of lists of numbers."""\n\n\ndef total(values):\n    """The sum of the values."""\n'
            "    result = 0\n    for value in values:\n        result += value\n    return result\n\n\n"
            'def mean(values):\n    """The arithmetic mean of the values (0.0 for no values)."""\n'
            "    return total(values) / len(values)\n"
        ),
        "tests/__init__.py": "",
        "tests/test_summary.py": (
            "import unittest\n\nfrom stats import mean\n\n\nclass MeanTest(unittest.TestCase):\n"
            "    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n"
        ),
    },
    hidden_test=(
        "import unittest\n\nfrom stats import mean\n\n\nclass Hidden(unittest.TestCase):\n"
        "    def test_empty(self):\n        self.assertEqual(mean([]), 0.0)\n"
        "    def test_values(self):\n        self.assertEqual(mean([2, 4]), 3)\n"
    ),
)

REPOS = {repo.name: repo for repo in (CALC, SHOUT, PAGES, MEAN)}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; its stdout."""
    done = subprocess.run(["git", "-C", str(repo), *GIT_USER, *args], check=True, capture_output=True, text=True)
    return done.stdout


def build(repo: BuggyRepo, path: Path) -> Path:
    """Write `repo` at `path` as a git checkout with one commit on `main`; returns `path`."""
    for name, text in repo.files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "Initial commit")
    return path


def resolved(repo: BuggyRepo, patch: str, workdir: Path) -> bool:
    """Whether `patch` applied to a fresh copy of `repo` makes its hidden test pass (run on the host)."""
    copy = build(repo, workdir / f"{repo.name}-check")
    if patch.strip():
        (workdir / "candidate.diff").write_text(patch)
        apply = ["git", "-C", str(copy), "apply", str(workdir / "candidate.diff")]
        applied = subprocess.run(apply, capture_output=True)
        if applied.returncode != 0:
            return False
    (copy / "tests" / "test_hidden_check.py").write_text(repo.hidden_test)
    check = subprocess.run(
        [sys.executable, "-m", "unittest", "-q", "tests.test_hidden_check"], cwd=copy, capture_output=True, timeout=60
    )
    return check.returncode == 0
