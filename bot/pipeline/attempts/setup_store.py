"""The worker's setup cache on disk: `<root>/<repo slug>/<key>.tar`, least recently used dropped past a total size.

An entry is one tar stream a sandbox wrote (never extracted on the worker) and its sha256, checked before every
use: a truncated or altered entry is dropped. Each repository has its own directory, and an entry is only ever
looked up under the repository that made it, so whatever a repository's setup left can only reach its own jobs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

import structlog

log = structlog.get_logger(__name__)
SUFFIX = ".tar"
SUM_SUFFIX = ".sha256"
CHUNK = 1 << 20
STALE_PART = 2 * 3600  # seconds: a `.part` this old was left by a worker that died mid-write (writes take ≤ 900 s)
_KEY = re.compile(r"[0-9a-f]{64}")


def repo_slug(repo: str) -> str:
    """A directory name for `owner/name` (case-insensitive, as GitHub's): readable, and distinct per repository."""
    name = repo.strip().lower()
    readable = re.sub(r"[^a-z0-9._-]+", "+", name).strip("+.")[:80] or "repo"
    return f"{readable}-{hashlib.sha256(name.encode()).hexdigest()[:10]}"


class CorruptEntry(Exception):
    """A cache entry could not be read back as it was written."""


class SetupStore:
    """Entries by (repository, key), bounded to `max_total` bytes over all repositories."""

    def __init__(self, root: Path, max_total: int) -> None:
        self.root, self.max_total = root, max_total
        self._lock = threading.Lock()
        self._pending: set[Path] = set()  # entries one sandbox of this process is writing now

    def path(self, repo: str, key: str) -> Path:
        """Where an entry lives (the key is a hex digest, so it cannot name another directory)."""
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a setup cache key: {key!r}")
        return self.root / repo_slug(repo) / f"{key}{SUFFIX}"

    def open(self, repo: str, key: str) -> IO[bytes] | None:
        """The entry, checked against its sum and marked as used now; None when there is none. CorruptEntry when it
        cannot be read or does not match (the caller drops it)."""
        path = self.path(repo, key)
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CorruptEntry(f"cannot open {path.name}: {exc}") from exc
        try:
            expected = path.with_suffix(SUM_SUFFIX).read_text(encoding="ascii").strip()
            if _digest(handle) != expected:
                raise CorruptEntry(f"{path.name} does not match its checksum")
            handle.seek(0)
            os.utime(path)  # the LRU order is the files' mtimes
        except (OSError, UnicodeDecodeError) as exc:
            handle.close()
            raise CorruptEntry(f"cannot read {path.name}: {exc}") from exc
        except CorruptEntry:
            handle.close()
            raise
        return handle

    def claim(self, repo: str, key: str, *, replace: bool = False) -> bool:
        """Whether this caller is the one to write the entry (none exists, or `replace`: the caller's trusted
        setup replaces one that failed to restore; no other thread is writing it). The old entry stays readable
        until the new one is whole (`write` renames over it)."""
        path = self.path(repo, key)
        with self._lock:
            if path in self._pending or (path.exists() and not replace):
                return False
            self._pending.add(path)
            return True

    def write(self, repo: str, key: str, fill: Callable[[IO[bytes]], int]) -> int:
        """Write a claimed entry with `fill` (which returns the bytes it wrote), then keep the total bound; the
        entry's size. Whatever `fill` raises leaves no entry."""
        path = self.path(repo, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.part")
        temp_sum = temp.with_suffix(".sum.part")
        try:
            with temp.open("wb") as out:
                size = fill(out)
            with temp.open("rb") as back:
                temp_sum.write_text(_digest(back) + "\n", encoding="ascii")
            os.replace(temp_sum, path.with_suffix(SUM_SUFFIX))  # a sum is read whole or not at all; a reader
            os.replace(temp, path)  # between these two renames of a replacement drops it: lost, never wrong
        finally:
            temp.unlink(missing_ok=True)
            temp_sum.unlink(missing_ok=True)
            with self._lock:
                self._pending.discard(path)
        self.evict(keep=path)
        return size

    def drop(self, repo: str, key: str) -> None:
        """Remove an entry (a corrupt one, or one that failed to restore)."""
        path = self.path(repo, key)
        for file in (path, path.with_suffix(SUM_SUFFIX)):
            with contextlib.suppress(FileNotFoundError):
                file.unlink()

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Remove least recently used entries until the total is within `max_total`; the ones removed. `keep` (the
        entry just written) goes last, and only when it alone is over the bound. Partial writes a dead worker left
        are removed first (they count against nothing, but fill the disk)."""
        self._sweep_parts()
        entries = []
        for path in self.root.glob(f"*/*{SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                info = path.stat()
                entries.append((path == keep, info.st_mtime, info.st_size, path))
        entries.sort(key=lambda e: (e[0], e[1]))
        total = sum(e[2] for e in entries)
        removed = []
        for _kept, _mtime, size, path in entries:
            if total <= self.max_total:
                break
            for file in (path, path.with_suffix(SUM_SUFFIX)):
                with contextlib.suppress(FileNotFoundError):
                    file.unlink()
            total -= size
            removed.append(path)
            log.info("setup_cache.evicted", entry=f"{path.parent.name}/{path.name}", bytes=size)
        return removed

    def _sweep_parts(self) -> None:
        cutoff = time.time() - STALE_PART
        for part in self.root.glob("*/.*.part"):
            with contextlib.suppress(FileNotFoundError):
                if part.stat().st_mtime < cutoff:
                    part.unlink()
                    log.info("setup_cache.stale_part_removed", entry=f"{part.parent.name}/{part.name}")


def _digest(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := handle.read(CHUNK):
        digest.update(chunk)
    return digest.hexdigest()
