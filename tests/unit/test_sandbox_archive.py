"""Extracting the sandbox's archive: crafted tars that try to escape, hide special files or overflow the cap."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.archive import extract_archive
from sandbox.base import SandboxError

Entry = Callable[[tarfile.TarFile], None]


def _file(name: str, data: bytes = b"x\n", mode: int = 0o644) -> Entry:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))

    return add


def _special(name: str, kind: bytes, link: str = "") -> Entry:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        tar.addfile(info)

    return add


def _chunks(*entries: Entry) -> list[bytes]:
    """A tar stream in small chunks, as the engine's archive API yields it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for entry in entries:
            entry(tar)
    data = buffer.getvalue()
    return [data[i : i + 700] for i in range(0, len(data), 700)]


def test_files_dirs_and_links_are_extracted_with_links_kept_as_links(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    stream = _chunks(
        _special("./src", tarfile.DIRTYPE),
        _file("./src/app.py", b"print()\n"),
        _file("./run.sh", b"#!/bin/sh\n", 0o4755),
        _special("./key", tarfile.SYMTYPE, "/etc/passwd"),
        _special("./copy.py", tarfile.LNKTYPE, "./src/app.py"),
        _file("./.git/config", b"[core]\n"),
    )
    extract_archive(stream, dest, max_bytes=1 << 20, skip_top=(".git",))
    assert (dest / "src/app.py").read_bytes() == b"print()\n"
    assert (dest / "run.sh").stat().st_mode & 0o7777 == 0o755  # executable, never setuid
    assert (dest / "key").is_symlink() and str((dest / "key").readlink()) == "/etc/passwd"
    assert (dest / "copy.py").read_bytes() == b"print()\n" and not (dest / "copy.py").is_symlink()
    assert not (dest / ".git").exists()


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ((_file("/etc/evil"),), "absolute path"),
        ((_file("./../evil"),), "leaving its root"),
        ((_file("a/../../evil"),), "leaving its root"),
        ((_special("./up", tarfile.SYMTYPE, ".."), _file("./up/evil")), "through a link"),
        ((_special("./etc", tarfile.SYMTYPE, "/etc"), _file("./etc/evil")), "through a link"),
        ((_special("./link", tarfile.LNKTYPE, "../outside"),), "leaving its root"),
        ((_special("./link", tarfile.LNKTYPE, "./missing"),), "hard link"),
        ((_special("./null", tarfile.CHRTYPE),), "special file"),
        ((_special("./disk", tarfile.BLKTYPE),), "special file"),
        ((_special("./pipe", tarfile.FIFOTYPE),), "special file"),
    ],
)
def test_an_escape_or_a_special_file_is_refused(tmp_path: Path, entries: tuple[Entry, ...], message: str) -> None:
    with pytest.raises(SandboxError, match=message):
        extract_archive(_chunks(*entries), tmp_path / "out", max_bytes=1 << 20)
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "evil").exists()


def test_a_symlink_replaced_by_a_file_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("safe\n")
    stream = _chunks(_special("./f", tarfile.SYMTYPE, str(target)), _file("./f", b"owned\n"))
    extract_archive(stream, tmp_path / "out", max_bytes=1 << 20)
    assert target.read_text() == "safe\n"
    assert (tmp_path / "out/f").read_bytes() == b"owned\n" and not (tmp_path / "out/f").is_symlink()


def test_the_size_cap_stops_the_export(tmp_path: Path) -> None:
    stream = _chunks(*(_file(f"./f{i}", b"y" * 4096) for i in range(10)))
    with pytest.raises(SandboxError, match="larger than the export limit of 20000 bytes"):
        extract_archive(stream, tmp_path / "out", max_bytes=20_000)
    written = sum(path.stat().st_size for path in (tmp_path / "out").iterdir())
    assert written <= 20_000


def test_many_empty_entries_count_against_the_cap(tmp_path: Path) -> None:
    stream = _chunks(*(_file(f"./e{i}", b"") for i in range(100)))
    with pytest.raises(SandboxError, match="export limit"):
        extract_archive(stream, tmp_path / "out", max_bytes=10 * 512)


def test_the_destination_must_be_new(tmp_path: Path) -> None:
    with pytest.raises(FileExistsError):
        extract_archive(_chunks(_file("./a")), tmp_path, max_bytes=1 << 20)
