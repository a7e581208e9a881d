"""`eval mine` on someone else's repository: a commit header it reads never becomes a git option (issue 32 #2).

A commit object may carry any header line after `committer`; git itself ignores a `parent` there, but a loose
reader took `parent --output=/path/victim` as the parent and passed it to `git diff-tree`, which emptied the file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.eval.history import scan
from bot.pipeline.git.gitops import GitError
from bot.pipeline.git.hostgit import base_checkout, commit_parts, diff
from bot.pipeline.git.quarantine import quarantined


def _sh(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, input=stdin, capture_output=True, check=True
    ).stdout.decode()


def _raw_commit(repo: Path, header: str, message: str) -> str:
    sha = _sh(
        repo, "hash-object", "--literally", "-t", "commit", "-w", "--stdin", stdin=f"{header}\n\n{message}\n".encode()
    )
    return sha.strip()


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("the operator's precious file\n")
    return path


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with a base commit; its tree after a change to tests and code (not committed); base sha."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _sh(repo, "init", "-q", "-b", "main")
    (repo / "tests").mkdir()
    (repo / "calc.py").write_text("x = 1\n")
    (repo / "tests" / "test_calc.py").write_text("def test_x():\n    assert True\n")
    _sh(repo, "add", "-A")
    _sh(repo, "commit", "-q", "-m", "base")
    base = _sh(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("x = 2\n")
    (repo / "tests" / "test_calc.py").write_text("def test_x():\n    assert 2\n")
    _sh(repo, "add", "-A")
    return repo, _sh(repo, "write-tree").strip(), base


def test_a_parent_header_after_committer_is_not_a_parent_and_never_an_option(tmp_path: Path, victim: Path) -> None:
    repo, tree, _ = _repo(tmp_path)
    header = f"tree {tree}\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000\nparent --output={victim}"
    sha = _raw_commit(repo, header, "fix x")
    _sh(repo, "update-ref", "HEAD", sha)
    # git itself reads this commit as a root commit: the late `parent` line is not a parent
    assert _sh(repo, "rev-list", "--parents", "-n1", "HEAD").split() == [sha]

    found, skipped = scan(repo, "HEAD", 10)

    assert victim.read_text() == "the operator's precious file\n"
    assert found == [] and skipped["root commit"] == 1


def test_a_parent_that_is_not_a_hex_object_name_is_refused(tmp_path: Path, victim: Path) -> None:
    repo, tree, _ = _repo(tmp_path)
    for bad in (f"--output={victim}", "HEAD", "0" * 39, "g" * 40):
        sha = _raw_commit(repo, f"tree {tree}\nparent {bad}\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000", "x")
        with quarantined(repo) as git_dir, pytest.raises(GitError, match="malformed commit"):
            commit_parts(git_dir, sha)
    assert victim.read_text() == "the operator's precious file\n"


def test_a_well_formed_commit_still_gives_its_parents(tmp_path: Path) -> None:
    repo, tree, base = _repo(tmp_path)
    header = f"tree {tree}\nparent {base}\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000\nencoding UTF-8"
    sha = _raw_commit(repo, header, "fix x\n\nparent deadbeef in the message is text")
    with quarantined(repo) as git_dir:
        parents, message = commit_parts(git_dir, sha)
    assert parents == [base] and message.startswith("fix x")
    _sh(repo, "update-ref", "HEAD", sha)
    found, _ = scan(repo, "HEAD", 10)
    assert [(c.sha, c.parent) for c in found] == [(sha, base)]


def test_a_revision_that_looks_like_an_option_reaches_git_as_a_revision(tmp_path: Path, victim: Path) -> None:
    repo, _, base = _repo(tmp_path)
    # values from a task file or a repository (a base commit, a mined parent) are never read as options
    with pytest.raises(GitError):
        base_checkout(str(repo), f"--output={victim}", tmp_path / "checkout")
    with pytest.raises(GitError):
        diff(repo, f"--output={victim}", base, [])
    assert victim.read_text() == "the operator's precious file\n"


def test_the_workers_git_reads_a_revision_as_a_revision(tmp_path: Path, victim: Path) -> None:
    from bot.pipeline.git import gitops

    repo, _, base = _repo(tmp_path)
    for call in (
        lambda: gitops.head(repo, f"--output={victim}"),
        lambda: gitops.diff_stat(repo, f"--output={victim}"),
        lambda: gitops.log_subjects(repo, f"--output={victim}", limit=5),
    ):
        with pytest.raises(GitError):
            call()
        assert victim.read_text() == "the operator's precious file\n"
    assert gitops.read_blob(repo, "calc.py", max_bytes=100, rev=base) == b"x = 1\n"


def test_a_merge_is_read_with_the_same_strict_header(tmp_path: Path, victim: Path) -> None:
    repo, tree, base = _repo(tmp_path)
    side = _raw_commit(repo, f"tree {tree}\nparent {base}\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000", "s")
    people = "author a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000"
    late = f"tree {tree}\nparent {base}\nparent {side}\n{people}\nparent --output={victim}"
    good = _raw_commit(repo, late, "Merge pull request #1")
    _sh(repo, "update-ref", "HEAD", good)
    found, _ = scan(repo, "HEAD", 10)
    with quarantined(repo) as git_dir:
        assert commit_parts(git_dir, good)[0] == [base, side]
    # two parents (the late `parent` line is not one): the merge against its first parent
    assert [(c.sha, c.parent) for c in found] == [(good, base)]
    assert victim.read_text() == "the operator's precious file\n"
