"""The setup cache's key: what a setup's result depends on, hashed (commands, image, network, dependency files).

The dependency files are read on the worker from its own clone: regular files only (a link is hashed as its
target's name, never followed), found at the top and a few directories down, with a bound on what is walked.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import stat
from pathlib import Path

KEY_VERSION = 1
DEPENDENCY_FILES = (
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "package.json",
    "go.mod", "go.sum", "Cargo.lock", "Cargo.toml", "pom.xml", "build.gradle", "build.gradle.kts",
    "settings.gradle", "settings.gradle.kts", "gradle.lockfile", "requirements*.txt", "constraints*.txt",
    "pyproject.toml", "setup.cfg", "setup.py", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock", "Gemfile.lock",
)  # fmt: skip
SKIPPED_DIRS = frozenset({".git", "node_modules", "vendor", "target", ".venv", "venv", "build", "dist", "__pycache__"})
MAX_DEPTH = 3  # the top is depth 0: `packages/app/package.json` of a monorepo is found, deeper ones are not
MAX_ENTRIES = 5000  # directory entries looked at, so a huge tree costs a bounded walk
HASH_CHUNK = 1 << 20


def is_dependency_file(name: str) -> bool:
    """Whether a file of this name says what setup installs (a lockfile, a manifest, requirements)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in DEPENDENCY_FILES)


def dependency_files(checkout: Path) -> list[str]:
    """The checkout's dependency files (relative paths, sorted), to MAX_DEPTH and within MAX_ENTRIES entries."""
    found: list[str] = []
    seen = 0
    todo: list[tuple[Path, int]] = [(checkout, 0)]
    while todo and seen < MAX_ENTRIES:
        directory, depth = todo.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries[: MAX_ENTRIES - seen]:
            seen += 1
            if entry.is_dir(follow_symlinks=False):
                if depth < MAX_DEPTH and entry.name not in SKIPPED_DIRS:
                    todo.append((Path(entry.path), depth + 1))
            elif is_dependency_file(entry.name):
                found.append(Path(entry.path).relative_to(checkout).as_posix())
    return sorted(found)


def file_digest(path: Path) -> str:
    """sha256 of a regular file's bytes, or of a link's target name (links are never followed)."""
    info = path.lstat()
    digest = hashlib.sha256()
    if stat.S_ISLNK(info.st_mode):
        digest.update(b"link:" + os.fsencode(os.readlink(path)))
    elif stat.S_ISREG(info.st_mode):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            while chunk := handle.read(HASH_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def setup_key(commands: list[str], image_id: str, networked: bool, checkout: Path) -> str:
    """The hex key of one setup: equal inputs give equal keys whatever order the files were found in."""
    files = {name: file_digest(checkout / name) for name in dependency_files(checkout)}
    material = {
        "version": KEY_VERSION,
        "commands": commands,
        "image": image_id,
        "networked": networked,
        "files": sorted(files.items()),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
