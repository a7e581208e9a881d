"""Real git checkouts for the security tests: a worker's clone with files committed on its default branch."""

from __future__ import annotations

import subprocess
from pathlib import Path

WHO = ["-c", "user.name=Seed", "-c", "user.email=seed@example.com"]


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` (plain git: this is the test's, not the App's)."""
    done = subprocess.run(["git", "-C", str(repo), *WHO, *args], check=True, capture_output=True)
    return done.stdout.decode("utf-8", "replace")


def checkout(root: Path, files: dict[str, bytes | str], links: dict[str, str] | None = None) -> Path:
    """A committed repository at root/repo with `files` (and symlinks `links`: name -> target)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    for name, target in (links or {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).symlink_to(target)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "seed")
    return repo
