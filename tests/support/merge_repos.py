"""Small real git histories for `eval mine` whose fixes arrive as PR merge commits (`git merge --no-ff`):
a Go module and a Python package, each: a root commit, a README commit on main, the fix on a branch merged as PR #12.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ADD_V1 = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
ADD_V2 = ADD_V1.replace("a - b", "a + b")
ADD_TEST_V1 = (
    'package calc\n\nimport "testing"\n\n'
    'func TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal("zero")\n\t}\n}\n'
)
ADD_TEST_V2 = ADD_TEST_V1 + (
    '\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatalf("Add(1, 2) = %d, want 3", Add(1, 2))\n\t}\n}\n'
)
STRINGS_V1 = 'def shout(text):\n    return text.lower() + "!"\n'
STRINGS_V2 = STRINGS_V1.replace("lower", "upper")
TEST_V1 = "import unittest\n\nfrom textkit.strings import shout\n\n\nclass ShoutTest(unittest.TestCase):\n"
TEST_V1 += '    def test_bang(self):\n        self.assertTrue(shout("a").endswith("!"))\n'
TEST_V2 = TEST_V1 + '\n    def test_shout(self):\n        self.assertEqual(shout("hi"), "HI!")\n'
FIX_MESSAGE = "Upper-case shout() instead of lower-casing it"


def git(repo: Path, *args: str) -> str:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    ident = ["-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    out = subprocess.run(["git", *ident, *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def merged_pr(repo: Path, root: dict[str, str], fix: dict[str, str], fix_message: str) -> dict[str, str]:
    """root commit, a docs commit on main, a branch with the fix merged with `--no-ff` as PR #12."""
    repo.mkdir()
    git(repo, "init", "-q")
    shas = {"root": commit(repo, root, "Initial")}
    git(repo, "checkout", "-q", "-b", "fix")
    shas["fix"] = commit(repo, fix, fix_message)
    git(repo, "checkout", "-q", "main")
    shas["docs"] = commit(repo, {"README.md": "# project\n"}, "Add a README")
    git(repo, "merge", "-q", "--no-ff", "fix", "-m", "Merge pull request #12 from someone/fix")
    shas["merge"] = git(repo, "rev-parse", "HEAD")
    return shas


def go_repo(repo: Path, fix_message: str = "Add adds (fixes #7)") -> dict[str, str]:
    root = {"go.mod": "module example.com/calc\n\ngo 1.19\n", "add.go": ADD_V1, "add_test.go": ADD_TEST_V1}
    return merged_pr(repo, root, {"add.go": ADD_V2, "add_test.go": ADD_TEST_V2}, fix_message)


def python_repo(repo: Path) -> dict[str, str]:
    root = {"textkit/__init__.py": "", "textkit/strings.py": STRINGS_V1, "tests/__init__.py": ""}
    root["tests/test_strings.py"] = TEST_V1
    fix = {"textkit/strings.py": STRINGS_V2, "tests/test_strings.py": TEST_V2}
    return merged_pr(repo, root, fix, FIX_MESSAGE)
