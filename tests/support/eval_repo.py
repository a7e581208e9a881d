"""A small project the eval tests build themselves, with a history like a real one's (no third-party code).

Commits, oldest first (the mining test knows which are valid tasks):
  1. initial: textkit.strings with slugify() and a shout() that lower-cases, tests of slugify  (root commit)
  2. docs: a README                                          (no test change)
  3. fix: shout() upper-cases, a test for it, "Fixes #3"     (valid: test_shout fails before, passes after)
  4. feature: word_count() in a new module with its tests    (valid: its tests fail before, pass after)
  5. tests: one more slugify test                            (no code change)
  6. refactor: slugify() rewritten, a test that passed before too  (dropped: nothing fails at the parent)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

STRINGS_V1 = '''"""String helpers."""


def slugify(text):
    """Lower-case words joined by dashes."""
    return "-".join(text.lower().split())


def shout(text):
    """The text in capitals, with an exclamation mark."""
    return text.lower() + "!"
'''
STRINGS_V2 = STRINGS_V1.replace("text.lower() + ", "text.upper() + ")
STRINGS_V3 = STRINGS_V2.replace('"-".join(text.lower().split())', '"-".join(word.lower() for word in text.split())')
TEST_STRINGS_V1 = """import unittest

from textkit.strings import slugify


class SlugifyTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(slugify("Hello big World"), "hello-big-world")

    def test_spaces(self):
        self.assertEqual(slugify("  a  b "), "a-b")
"""
TEST_STRINGS_V2 = (
    TEST_STRINGS_V1.replace("import slugify", "import shout, slugify")
    + """

class ShoutTest(unittest.TestCase):
    def test_shout(self):
        self.assertEqual(shout("hi"), "HI!")
"""
)
TEST_STRINGS_V3 = TEST_STRINGS_V2.replace(
    """    def test_spaces(self):""",
    """    def test_single(self):
        self.assertEqual(slugify("Word"), "word")

    def test_spaces(self):""",
)
TEST_STRINGS_V4 = TEST_STRINGS_V3.replace(
    "\n\nclass ShoutTest",
    """
    def test_tabs(self):
        self.assertEqual(slugify("a\\tb"), "a-b")


class ShoutTest""",
)
COUNT = '''"""Counting."""


def word_count(text):
    """How many words `text` holds."""
    return len(text.split())
'''
TEST_COUNT = """import unittest

from textkit.count import word_count


class WordCountTest(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(word_count(""), 0)

    def test_words(self):
        self.assertEqual(word_count("one two  three"), 3)
"""
ISSUES = [
    {"number": 3, "title": "shout() does not shout", "body": 'shout("hi") returns "hi!", expected "HI!".'},
]
SHOUT_ISSUE = 'shout() does not shout\n\nshout("hi") returns "hi!", expected "HI!".'


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` as a fixed author; return its output."""
    who = ["-c", "user.name=Ada Dev", "-c", "user.email=ada@example.com", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", "-C", str(repo), *who, *args], check=True, capture_output=True, text=True)
    return done.stdout


def _commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def build_repo(root: Path) -> dict[str, str]:
    """Create the project under `root`; return each commit's sha by its step name."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    shas = {
        "initial": _commit(
            root,
            "Initial commit: slugify and shout",
            {
                "textkit/__init__.py": "",
                "textkit/strings.py": STRINGS_V1,
                "tests/__init__.py": "",
                "tests/test_strings.py": TEST_STRINGS_V1,
            },
        ),
        "readme": _commit(root, "Add a README", {"README.md": "# textkit\n\nSmall string helpers.\n"}),
        "fix_shout": _commit(
            root,
            "Make shout() upper-case its text\n\nFixes #3",
            {
                "textkit/strings.py": STRINGS_V2,
                "tests/test_strings.py": TEST_STRINGS_V2,
            },
        ),
        "word_count": _commit(
            root,
            "Add word_count()\n\nCounts whitespace-separated words.",
            {
                "textkit/count.py": COUNT,
                "tests/test_count.py": TEST_COUNT,
            },
        ),
        "more_tests": _commit(root, "Test slugify on a single word", {"tests/test_strings.py": TEST_STRINGS_V3}),
        "refactor": _commit(
            root,
            "Rewrite slugify as a generator; test tabs",
            {
                "textkit/strings.py": STRINGS_V3,
                "tests/test_strings.py": TEST_STRINGS_V4,
            },
        ),
    }
    return shas


def write_issues(path: Path) -> Path:
    """The issues file `eval mine --issues` reads (as `gh issue list --json number,title,body` writes it)."""
    path.write_text(json.dumps(ISSUES))
    return path
