"""Tar streams in and out of the sandbox: size-capped both ways; nothing extracted may land outside its destination."""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from sandbox.base import ExportCap, ExportTooLarge, SandboxError

FILE_MODE = 0o644
EXEC_MODE = 0o755
COPY_CHUNK = 1 << 20
MAX_NAME = 4096  # Linux's PATH_MAX: a longer path could not be written anyway


class ChunkReader:
    """A file-like `read(n)` over an iterator of byte chunks (the engine's archive stream)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._buffer = bytearray()

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (all that is left when negative); b"" at the end."""
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        cut = len(self._buffer) if size < 0 else size
        data = bytes(self._buffer[:cut])
        del self._buffer[:cut]
        return data


def extract_archive(chunks: Iterable[bytes], dest: Path, *, max_bytes: int, skip_top: tuple[str, ...] = ()) -> None:
    """Unpack a tar stream into the new directory `dest`; top-level names in `skip_top` are read past, not kept.

    Past `max_bytes` (every entry's contents plus 512 bytes a header) it stops with a SandboxError; when
    `max_bytes` is an ExportCap, it also stops (ExportTooLarge) as soon as the entries to write go past its
    `entries`, before that one is written, and reads past its `skip` paths without writing them."""
    dest.mkdir(parents=True, exist_ok=False)
    root = dest.resolve()
    cap = max_bytes if isinstance(max_bytes, ExportCap) else ExportCap(max_bytes)
    skip = tuple(p.rstrip("/") for p in cap.skip)
    total = entries = 0
    made: set[str] = set()  # directories written or about to be: a missing parent is made, and counted, once
    with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as tar:  # type: ignore[call-overload]
        for member in tar:
            name = _relative(member.name)
            if not name or name.split("/", 1)[0] in skip_top:
                continue
            size = member.size + tarfile.BLOCKSIZE + _linked_size(root, member)
            total += size
            if total > max_bytes:
                raise SandboxError(
                    f"the sandbox's working directory is larger than the export limit of {int(max_bytes)} bytes"
                )
            if any(name == p or name.startswith(p + "/") for p in skip):
                continue
            if len(name) > MAX_NAME:
                raise SandboxError(f"the sandbox's archive has a path longer than {MAX_NAME} bytes: {name[:200]!r}")
            ends = [i for i, ch in enumerate(name) if ch == "/"] + ([len(name)] if member.isdir() else [])
            new = {name[:i] for i in ends} - made
            made |= new
            entries += len(new) if member.isdir() else len(new) + 1
            if cap.entries is not None and entries > cap.entries:
                raise ExportTooLarge(
                    f"the sandbox's working directory holds more than {cap.entries} files and directories outside "
                    "what setup made: far more than the checkout and any change within this deployment's caps "
                    "(MINIFIX_MAX_CHANGED_FILES) need"
                )
            _extract(tar, member, root, name)


def tar_directory(src: Path, out: IO[bytes], uid: int, gid: int, cap: int) -> None:
    """Write a tar of `src`'s contents with every entry owned by uid:gid; SandboxError past `cap` bytes."""
    total = 0

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        nonlocal total
        total += info.size + tarfile.BLOCKSIZE
        if total > cap:
            raise SandboxError(f"the checkout is larger than the sandbox's copy-in limit of {cap} bytes")
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(str(src), arcname=".", filter=owned)


def _linked_size(root: Path, member: tarfile.TarInfo) -> int:
    """A hard link is extracted as a copy, so it costs its target's size."""
    if not member.islnk():
        return 0
    source = root / _relative(member.linkname)
    return source.lstat().st_size if source.is_file() and not source.is_symlink() else 0


def _relative(name: str) -> str:
    """The member's path relative to the archive root ("" for the root); absolute or `..` paths are refused."""
    if name.startswith("/"):
        raise SandboxError(f"the sandbox's archive has an absolute path: {name!r}")
    parts = [part for part in posixpath.normpath(name).split("/") if part not in ("", ".")]
    if ".." in parts or "\x00" in name:
        raise SandboxError(f"the sandbox's archive has a path leaving its root: {name!r}")
    return "/".join(parts)


def _parent(root: Path, name: str) -> Path:
    """The directory an entry goes into, checked to be a real directory (no link) all the way down from root."""
    current = root
    for part in name.split("/")[:-1]:
        current = current / part
        try:
            info = current.lstat()
        except FileNotFoundError:
            current.mkdir()
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise SandboxError(f"the sandbox's archive writes through a link or file: {name!r}")
    return current


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, root: Path, name: str) -> None:
    """One entry: a directory, a regular file, a symlink (kept as a link) or a hard link (copied); else refused."""
    target = _parent(root, name) / name.rsplit("/", 1)[-1]
    if member.isdir():
        if not target.is_dir() or target.is_symlink():
            _clear(target)
            target.mkdir()
    elif member.isreg():
        _clear(target)
        _write(tar, member, target)
    elif member.issym():
        _clear(target)
        os.symlink(member.linkname, target)
    elif member.islnk():
        source = root / _relative(member.linkname)
        if source.is_symlink() or not source.is_file() or not source.resolve().is_relative_to(root):
            raise SandboxError(f"the sandbox's archive has a hard link to something not extracted: {name!r}")
        _clear(target)
        shutil.copyfile(source, target, follow_symlinks=False)
    else:
        raise SandboxError(f"the sandbox's working directory holds a special file (device, fifo or socket): {name!r}")


def _clear(target: Path) -> None:
    """Make room for an entry: an earlier entry of the same name is replaced, never written through."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        raise SandboxError(f"the sandbox's archive replaces a directory with a file: {target.name!r}")


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    """A regular file's contents, created new (never through a link), executable only if it was."""
    source = tar.extractfile(member)
    if source is None:
        raise SandboxError(f"the sandbox's archive has an unreadable file: {member.name!r}")
    mode = EXEC_MODE if member.mode & 0o111 else FILE_MODE
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as out:
        while data := source.read(COPY_CHUNK):
            out.write(data)
    os.chmod(target, mode)
