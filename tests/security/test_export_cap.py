"""Taking the agent's tree out of the sandbox stops at a file-count cap as it goes (issue 32 #8).

Before, the export wrote every file of the tree to the worker's disk and only then did the change caps refuse it
(200,000 files: 136 s and 787 MiB of worker disk before the refusal). Now the export counts what it writes and
stops at a cap no tree within the change caps can reach; what setup left untracked is read past, not written.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.jobs import Outcome
from bot.pipeline.attempts import execute
from bot.pipeline.change import ChangeCaps, setup_excludes
from bot.pipeline.errors import RunFailed
from sandbox.archive import extract_archive
from sandbox.base import ExportCap, ExportTooLarge
from tests.support.candidates import calc_base
from tests.support.fake_sandbox import FakeSandbox


def _stream(names: list[str]) -> Iterator[bytes]:
    """A tar stream of one small file per name, produced lazily in 64 KiB chunks."""
    buffer = io.BytesIO()
    tar = tarfile.open(fileobj=buffer, mode="w")  # noqa: SIM115 - written entry by entry as the stream is read
    for name in names:
        info = tarfile.TarInfo(name)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"x\n"))
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    tar.close()
    yield buffer.getvalue()


def _written(dest: Path) -> int:
    return sum(len(files) + len(dirs) for _, dirs, files in os.walk(dest))


def test_the_export_stops_at_the_entry_cap_before_writing_past_it(tmp_path: Path) -> None:
    names = [f"./junk/f{n}.txt" for n in range(5000)]
    with pytest.raises(ExportTooLarge, match="more than 100 files and directories"):
        extract_archive(_stream(names), tmp_path / "out", max_bytes=ExportCap(1 << 30, entries=100))
    assert _written(tmp_path / "out") <= 100


def test_what_setup_left_is_read_past_not_written_or_counted(tmp_path: Path) -> None:
    names = [f"./node_modules/m{n}/index.js" for n in range(300)] + ["./src/app.py", "./.venv/bin/python"]
    cap = ExportCap(1 << 30, entries=5, skip=("node_modules/", ".venv/"))
    extract_archive(_stream(names), tmp_path / "out", max_bytes=cap)
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*")) == [
        "src",
        "src/app.py",
    ]


def test_a_plain_byte_cap_still_works_alone(tmp_path: Path) -> None:
    extract_archive(_stream([f"./f{n}" for n in range(50)]), tmp_path / "out", max_bytes=1 << 20)
    assert _written(tmp_path / "out") == 50


def test_a_tree_of_many_files_ends_the_run_with_the_limits_outcome_as_the_export_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execute, "EXPORT_SLACK", 0)
    base = calc_base(tmp_path)
    sandbox = FakeSandbox(workdir=tmp_path / "box")
    shutil.copytree(base, sandbox.workdir, dirs_exist_ok=True)
    (sandbox.workdir / "junk").mkdir()
    for n in range(3000):
        (sandbox.workdir / "junk" / f"f{n}").write_text("x")
    caps = ChangeCaps(files=50, bytes=1 << 20)
    cap = execute.export_cap(base, 1 << 30, caps)
    assert isinstance(cap, ExportCap) and cap.entries is not None and cap.entries < 3000
    with pytest.raises(RunFailed) as failed:
        execute.take_change(sandbox, base, tmp_path / "export", max_bytes=1 << 30, caps=caps)
    assert failed.value.outcome == Outcome.LIMITS and "files and directories" in failed.value.detail
    assert _written(tmp_path / "export") <= cap.entries


def test_setup_output_that_names_a_tracked_path_is_never_read_past(tmp_path: Path) -> None:
    base = calc_base(tmp_path)
    tracked = [p for p in os.listdir(base) if p != ".git"]
    listing = "\0".join(["node_modules/", *tracked, "calc/"]) + "\0"  # the sandbox's word
    cap = execute.export_cap(base, 1 << 30, ChangeCaps(), setup_excludes(listing))
    assert isinstance(cap, ExportCap) and cap.skip == ("node_modules/",)
