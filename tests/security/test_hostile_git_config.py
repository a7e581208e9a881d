"""A repository given by path whose own `.git/config` names programs: none of them runs when the worker reads it.

Each key's program writes a marker file; the bait is checked to work with a plain `git` first (so the test can
fail), then every host-side reader of a user-given repository runs and no marker may appear.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.eval.history import scan
from bot.pipeline.git.hostgit import base_checkout, diff
from bot.pipeline.local import checked_head

# Each key → a program that leaves a marker named after the key. {p} is the program's path.
PROGRAM_KEYS = (
    "gpg.program",
    "gpg.ssh.program",
    "gpg.x509.program",
    "core.fsmonitor",
    "core.pager",
    "pager.log",
    "pager.show",
    "pager.diff",
    "core.sshCommand",
    "core.askPass",
    "core.alternateRefsCommand",
    "credential.helper",
    "diff.external",
    "diff.bait.command",
    "diff.bait.textconv",
    "filter.bait.clean",
    "filter.bait.smudge",
    "filter.bait.process",
    "uploadpack.packObjectsHook",
    "remote.origin.uploadpack",
    "include.path",
    "includeIf.gitdir:/.path",
)
PLAIN_KEYS = {"log.showSignature": "true", "protocol.allow": "always", "core.hooksPath": "hooks-bait"}
HOOKS = ("post-checkout", "reference-transaction", "pre-auto-gc", "post-index-change", "fsmonitor-watchman")


def _program(bin_dir: Path, marks: Path, name: str) -> Path:
    path = bin_dir / name.replace("/", "_").replace(":", "_")
    path.write_text(f"#!/bin/sh\ntouch '{marks}/{path.name}'\nexit 1\n")
    path.chmod(0o755)
    return path


def _sh(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"}
    return subprocess.run(["git", *args], cwd=repo, env=env, input=stdin, capture_output=True, check=True).stdout


def _signed_commit(repo: Path, message: str) -> str:
    """A commit whose header carries a `gpgsig`: `git show` with log.showSignature runs gpg.program on it."""
    tree = _sh(repo, "write-tree").decode().strip()
    head = _sh(repo, "rev-parse", "HEAD").decode().strip()
    body = (
        f"tree {tree}\nparent {head}\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----\n\n"
        f"{message}\n"
    )
    sha = _sh(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body.encode()).decode().strip()
    _sh(repo, "update-ref", "HEAD", sha)
    return sha


def _hostile_repo(root: Path) -> tuple[Path, Path]:
    """A repository with a change to tests and code, a signed tip, attributes naming drivers, and the bait config."""
    repo, marks, bin_dir = root / "repo", root / "marks", root / "bin"
    for d in (repo, marks, bin_dir):
        d.mkdir()
    _sh(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("* diff=bait filter=bait\n")
    (repo / "tests").mkdir()
    (repo / "calc.py").write_text("x = 1\n")
    (repo / "tests" / "test_calc.py").write_text("def test_x():\n    assert True\n")
    _sh(repo, "add", "-A")
    _sh(repo, "commit", "-q", "-m", "base")
    (repo / "calc.py").write_text("x = 2\n")
    (repo / "tests" / "test_calc.py").write_text("def test_x():\n    assert 2\n")
    _sh(repo, "add", "-A")
    _sh(repo, "commit", "-q", "-m", "fix x")
    _signed_commit(repo, "signed tip\n\nchanges nothing")
    included = root / "included.cfg"
    included.write_text(f"[core]\n\tfsmonitor = {_program(bin_dir, marks, 'included-fsmonitor')}\n")
    for key in PROGRAM_KEYS:
        value = included if key.startswith("include") else _program(bin_dir, marks, key)
        _sh(repo, "config", key, str(value))
    for key, value in PLAIN_KEYS.items():
        _sh(repo, "config", key, value)
    for hook_dir in (repo / ".git" / "hooks", repo / "hooks-bait"):
        hook_dir.mkdir(exist_ok=True)
        for hook in HOOKS:
            _program(hook_dir, marks, f"hook-{hook}")
    return repo, marks


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    return _hostile_repo(tmp_path)


def test_the_bait_runs_under_a_plain_git(hostile: tuple[Path, Path]) -> None:
    repo, marks = hostile
    subprocess.run(["git", "show", "-s", "--format=%B", "HEAD"], cwd=repo, capture_output=True, check=False, timeout=60)
    subprocess.run(["git", "diff", "HEAD~2", "HEAD~1"], cwd=repo, capture_output=True, check=False, timeout=60)
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False, timeout=60)
    ran = {p.name for p in marks.iterdir()}
    assert {"gpg.program", "filter.bait.process"} <= ran
    assert "core.fsmonitor" in ran or "included-fsmonitor" in ran


def test_eval_mine_and_checkouts_run_none_of_the_repositorys_programs(
    hostile: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, marks = hostile
    found, skipped = scan(repo, "HEAD", 10)
    assert [c.message for c in found] == ["fix x"] and skipped["no test change"] == 1
    assert "x = 2" in found[0].patch and "assert 2" in found[0].test_patch
    assert "x = 2" in diff(repo, found[0].parent, found[0].sha, [])
    head = base_checkout(str(repo), found[0].sha, tmp_path / "base")
    assert head == found[0].sha and (tmp_path / "base" / "calc.py").read_text() == "x = 2\n"
    head = checked_head(repo)  # `mini-fix run`'s commit, read through the quarantine
    own = tmp_path / "own"
    assert base_checkout(str(repo), head, own) == head
    assert (own / "calc.py").read_text() == "x = 2\n"
    assert "hooks-bait" not in (own / ".git" / "config").read_text()
    assert sorted(p.name for p in marks.iterdir()) == []


def test_a_file_url_and_a_linked_worktree_are_quarantined_too(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    repo, marks = hostile
    base_checkout(f"file://{repo}", "HEAD~1", tmp_path / "url")
    _sh(
        repo,
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "worktree",
        "add",
        "-q",
        "--no-checkout",
        str(tmp_path / "wt"),
    )
    for p in marks.iterdir():
        p.unlink()  # making the worktree with a plain git ran the checkout's filters; only what follows counts
    found, _ = scan(tmp_path / "wt", "HEAD", 10)
    assert [c.message for c in found] == ["fix x"]
    assert checked_head(tmp_path / "wt")
    assert sorted(p.name for p in marks.iterdir()) == []
