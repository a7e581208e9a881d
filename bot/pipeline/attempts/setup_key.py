"""The setup cache's key: what a setup's result depends on, hashed (commands, image, network, dependency files).

The dependency files are read on the worker from its own clone: regular files only (a link is hashed as its
target's name, never followed), found by name at the top and a few directories down, plus any file of the checkout
a setup command names (`pip install -r requirements/dev.txt`, however deep). A tree too large to walk within the
bound gets no key (setup runs uncached): a lockfile past the bound could change unseen and restore stale packages.

The key does not cover everything setup executes (an npm `postinstall` script, `build.rs`, a Makefile target,
`python -m pkg.mod`): two trees that differ only there share a key. That is why only setup on a trusted tree (the
default branch's head) ever writes an entry (`setup_cache.RepoSetup.trusts`), and why the commit's files are laid
back after setup or a restore (`execute.run_setup`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import json
import os
import shlex
import stat
from pathlib import Path, PurePosixPath

KEY_VERSION = 3  # 3: entries of earlier versions may hold setup run on agent-written branches: never restored
DEPENDENCY_FILES = (
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "package.json",
    "go.mod", "go.sum", "Cargo.lock", "Cargo.toml", "pom.xml", "build.gradle", "build.gradle.kts",
    "settings.gradle", "settings.gradle.kts", "gradle.lockfile", "requirements*.txt", "constraints*.txt",
    "pyproject.toml", "setup.cfg", "setup.py", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock", "Gemfile.lock",
    "Gemfile", "go.work", "go.work.sum", "environment.yml", "libs.versions.toml", ".npmrc", ".yarnrc.yml",
    ".python-version", ".nvmrc", ".node-version", ".tool-versions", "rust-toolchain", "rust-toolchain.toml",
)  # fmt: skip
SKIPPED_DIRS = frozenset({".git", "node_modules", "vendor", "target", ".venv", "venv", "build", "dist", "__pycache__"})
MAX_DEPTH = 3  # the top is depth 0: `packages/app/package.json` of a monorepo is found, deeper ones are not
MAX_ENTRIES = 20_000  # directory entries looked at, so a huge tree costs a bounded walk (~20 ms)
MAX_NAMED = 64  # words of the setup commands looked up as files
HASH_CHUNK = 1 << 20


class TreeTooLarge(OSError):
    """The walk for dependency files hit MAX_ENTRIES: no key can vouch for the tree."""


def is_dependency_file(name: str) -> bool:
    """Whether a file of this name says what setup installs (a lockfile, a manifest, requirements)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in DEPENDENCY_FILES)


def dependency_files(checkout: Path) -> list[str]:
    """The checkout's dependency files (relative paths, sorted), to MAX_DEPTH and within MAX_ENTRIES entries."""
    found: list[str] = []
    seen = 0
    todo: list[tuple[Path, int]] = [(checkout, 0)]
    while todo:
        directory, depth = todo.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(itertools.islice(listing, MAX_ENTRIES + 1 - seen))
        except OSError:
            continue
        seen += len(entries)
        if seen > MAX_ENTRIES:  # counted while listing: a directory of a million files costs no more
            raise TreeTooLarge(f"more than {MAX_ENTRIES:,} entries to look through for dependency files")
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if depth < MAX_DEPTH and entry.name not in SKIPPED_DIRS:
                    todo.append((Path(entry.path), depth + 1))
            elif is_dependency_file(entry.name):
                found.append(Path(entry.path).relative_to(checkout).as_posix())
    return sorted(found)


def named_files(commands: list[str], checkout: Path) -> list[str]:
    """Files of the checkout the setup commands name (`-r requirements/dev.txt`, `--file=env.yml`): relative,
    inside the checkout, a regular file or a link (hashed as such)."""
    words: list[str] = []
    for command in commands:
        try:
            words += shlex.split(command)
        except ValueError:  # unbalanced quotes: the words as they stand
            words += command.split()
    found = set()
    for word in words[:MAX_NAMED]:
        name = PurePosixPath(word.split("=", 1)[-1])
        if not name.parts or name.is_absolute() or ".." in name.parts or name.parts[0] == ".git":
            continue
        try:
            mode = (checkout / name).lstat().st_mode
        except (OSError, ValueError):
            continue
        if (stat.S_ISREG(mode) or stat.S_ISLNK(mode)) and _real_dirs(checkout, name):
            found.add(name.as_posix())
    return sorted(found)


def _real_dirs(checkout: Path, name: PurePosixPath) -> bool:
    """Every directory on the way to `name` is a directory of the checkout, not a link out of it (lstat follows
    the links before the last component)."""
    here = checkout
    for part in name.parts[:-1]:
        here = here / part
        if not stat.S_ISDIR(here.lstat().st_mode):
            return False
    return True


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
    names = set(dependency_files(checkout)) | set(named_files(commands, checkout))
    files = {name: file_digest(checkout / name) for name in names}
    material = {
        "version": KEY_VERSION,
        "commands": commands,
        "image": image_id,
        "networked": networked,
        "files": sorted(files.items()),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
