"""Candidates for verification tests: a buggy repository and attempts whose changes are real host-side diffs."""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.pipeline.candidates import Candidate
from bot.pipeline.change import compute_change
from tests.support.buggy_repos import REPOS, build

CALC = REPOS["calc"]
FIX = ("calc/ops.py", CALC.files["calc/ops.py"].replace("return a - b", "return a + b"))
REPRO = (
    "tests/test_add.py",
    "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
)
# A "reproduction" that passes on the base commit too: it tests what already works.
CLAIM = (
    "tests/test_claim.py",
    "import unittest\n\nfrom calc import mul\n\n\nclass MulAgain(unittest.TestCase):\n"
    "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
)
REPO_TEST = "python3 -m unittest discover -s tests -t ."


def calc_base(where: Path) -> Path:
    """The calc repository (add() subtracts) as a git checkout: the base commit."""
    return build(CALC, where / "calc")


def candidate(base: Path, index: int, *files: tuple[str, str | None], exit_status: str = "Submitted") -> Candidate:
    """Attempt `index` whose change writes (or, with None, deletes) `files`, diffed by the host's git."""
    tree = base.parent / f"attempt-{index}"
    shutil.copytree(base, tree, ignore=shutil.ignore_patterns(".git"))
    for path, text in files:
        if text is None:
            (tree / path).unlink()
        else:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(text)
    change = compute_change(base, tree)
    return Candidate(index=index, run_id=f"run-{index}", exit_status=exit_status, change=change)
