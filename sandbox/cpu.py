"""A container's CPU time, for the usage meter: read from its cgroup on the host when the engine is local (a file
read, microseconds), else asked of the engine. The engine's one-shot stats call waits for its collector's next
tick once the collector runs (about 0.45 s here), and the meter reads it on every sandbox's way out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_cpu_seconds(container_id: str, root: Path = CGROUP_ROOT) -> float | None:
    """The CPU-seconds the kernel counted for the container's cgroup (v2 `cpu.stat` usage_usec, v1 cpuacct.usage
    in ns; the cgroupfs and systemd drivers' places), None when no such file is readable here (a remote engine,
    a worker in a container without the host's cgroups)."""
    if not container_id.isalnum():
        return None
    for place in (root / "docker" / container_id, root / "system.slice" / f"docker-{container_id}.scope"):
        try:
            for line in (place / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            pass
    for place in (root / "cpuacct" / "docker" / container_id, root / "cpu,cpuacct" / "docker" / container_id):
        try:
            return int((place / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            pass
    return None


def engine_cpu_seconds(api: Any, container_id: str) -> float | None:
    """The same figure from the engine's one-shot stats (a remote engine); None when it cannot say."""
    try:
        stats = api.stats(container_id, stream=False, one_shot=True)
        return int(stats["cpu_stats"]["cpu_usage"]["total_usage"]) / 1e9
    except Exception:  # a container already gone, an engine away: no figure rather than a failed run
        return None
