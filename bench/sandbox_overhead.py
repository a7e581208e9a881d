"""Per-action overhead of the sandbox, side by side in one run: an action of `true`, N times each way.

Compares DockerSandbox.execute with a raw `docker exec` (CLI) into the same container, the SDK's exec_run,
and mini-swe-agent 2.4.6's DockerEnvironment on the same image; also times container start. Run by hand:

    .venv/bin/python bench/sandbox_overhead.py [--n 50] [--starts 5] [--image mini-fix-sandbox:latest]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import time
from collections.abc import Callable

from sandbox.base import SandboxConfig
from sandbox.docker import DockerSandbox
from sandbox.engine import connect


def timed(action: Callable[[], object], n: int, warmup: int = 3) -> list[float]:
    """Milliseconds of each of `n` calls, after a few untimed ones."""
    for _ in range(warmup):
        action()
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        action()
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def p90(samples: list[float]) -> float:
    """The 90th percentile."""
    return statistics.quantiles(samples, n=10)[-1]


def start_times(config: SandboxConfig, n: int) -> list[float]:
    """Milliseconds from DockerSandbox.start until its runner answers (closing is not counted)."""
    client = connect()
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        sandbox = DockerSandbox.start(config, "bench-start", client=client)
        samples.append((time.perf_counter() - began) * 1000)
        sandbox.close()
    return samples


def mini_swe_agent_env(image: str) -> object:
    """mini-swe-agent's DockerEnvironment on our image (imported late: it prints a banner on import)."""
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    from minisweagent.environments.docker import DockerEnvironment

    logging.getLogger("minisweagent").setLevel(logging.WARNING)
    return DockerEnvironment(image=image, cwd="/testbed")


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--image", default="mini-fix-sandbox:latest")
    args = parser.parse_args()

    client = connect()
    config = SandboxConfig(image=args.image)
    starts = start_times(config, args.starts)
    began = time.perf_counter()
    env = mini_swe_agent_env(args.image)
    mswea_start = (time.perf_counter() - began) * 1000
    rows: dict[str, list[float]] = {}
    with DockerSandbox.start(config, "bench", client=client) as sandbox:
        cid = sandbox.container_id
        rows["mini-fix DockerSandbox.execute"] = timed(lambda: sandbox.execute("true"), args.n)
        rows["docker exec CLI (same container)"] = timed(
            lambda: subprocess.run(["docker", "exec", cid, "true"], check=True), args.n
        )
        rows["docker SDK exec_run (same container)"] = timed(
            lambda: client.containers.get(cid).exec_run(["true"]), args.n
        )
        rows["mini-swe-agent DockerEnvironment"] = timed(
            lambda: env.execute({"command": "true"}),  # type: ignore[attr-defined]
            args.n,
        )
    env.cleanup()  # type: ignore[attr-defined]

    reference = statistics.median(rows["mini-swe-agent DockerEnvironment"])
    print(f"{'path (N=' + str(args.n) + ' x `true`)':42} {'median ms':>10} {'p90 ms':>8} {'vs mswea':>9}")
    for name, samples in rows.items():
        median = statistics.median(samples)
        print(f"{name:42} {median:10.1f} {p90(samples):8.1f} {median / reference:8.3f}x")
    print(f"\n{'start (N=' + str(args.starts) + ', connect included)':42} {'median ms':>10}")
    print(f"{'mini-fix DockerSandbox.start':42} {statistics.median(starts):10.1f}")
    print(f"{'mini-swe-agent DockerEnvironment() (1 run)':42} {mswea_start:10.1f}")


if __name__ == "__main__":
    main()
