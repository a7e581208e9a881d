"""Whether a file about to hold a secret would be committed: inside a git work tree and not ignored there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def unignored_in_work_tree(path: Path) -> Path | None:
    """The work tree's root when `path` lies in one and git does not ignore it; None when it is safe to write."""
    git = shutil.which("git")
    folder = path.resolve().parent
    if git is None or not folder.is_dir():
        return None
    top = _git(git, folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:  # not in a work tree (or git cannot tell): nothing would commit it
        return None
    # check-ignore answers for paths that do not exist yet, by the same rules `git add` would apply.
    ignored = _git(git, folder, "check-ignore", "-q", "--no-index", str(path.resolve()))
    return None if ignored.returncode == 0 else Path(top.stdout.strip())


def _git(git: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([git, *args], cwd=cwd, capture_output=True, text=True, check=False)
