"""A container's CPU time read from its cgroup on the host (v2 and v1 layouts), else from the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.cpu import cgroup_cpu_seconds, engine_cpu_seconds

CID = "c939295494bf7c22b428ac586f5b3ce3ea80ccc12f132b6634c8cd11fbebdf5a"


@pytest.mark.parametrize(
    ("place", "name", "text", "seconds"),
    [
        (f"docker/{CID}", "cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n", 2.5),
        (f"system.slice/docker-{CID}.scope", "cpu.stat", "usage_usec 1250000\n", 1.25),
        (f"cpuacct/docker/{CID}", "cpuacct.usage", "22341330\n", 0.02234133),
    ],
)
def test_the_cgroup_file_of_each_layout_is_read(
    tmp_path: Path, place: str, name: str, text: str, seconds: float
) -> None:
    (tmp_path / place).mkdir(parents=True)
    (tmp_path / place / name).write_text(text)
    assert cgroup_cpu_seconds(CID, tmp_path) == pytest.approx(seconds)


def test_no_cgroup_here_or_an_odd_id_is_no_figure(tmp_path: Path) -> None:
    assert cgroup_cpu_seconds(CID, tmp_path) is None
    (tmp_path / "docker" / "x").mkdir(parents=True)
    (tmp_path / "docker" / "x" / "cpu.stat").write_text("usage_usec 1\n")
    assert cgroup_cpu_seconds("../docker/x", tmp_path) is None  # never a path out of the id


def test_the_engine_is_asked_when_no_cgroup_is_readable() -> None:
    class Api:
        def stats(self, cid: str, **kwargs: Any) -> dict[str, Any]:
            assert kwargs == {"stream": False, "one_shot": True}
            return {"cpu_stats": {"cpu_usage": {"total_usage": 3_000_000_000}}}

    class Gone:
        def stats(self, cid: str, **kwargs: Any) -> dict[str, Any]:
            raise RuntimeError("no such container")

    assert engine_cpu_seconds(Api(), CID) == 3.0
    assert engine_cpu_seconds(Gone(), CID) is None
