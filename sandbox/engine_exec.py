"""Commands run as their own engine exec: the return code is the engine's, the output read under a cap."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import docker

from sandbox.base import SandboxConfig, SandboxError
from sandbox.channel import FramedStream
from sandbox.engine import translated

DEADLINE_GRACE = 1.0  # `timeout -s KILL` inside fires first; the host's own deadline is for what escaped it
AFTER_KILL_SECONDS = 5.0  # reading on after the deadline's kill, until every holder of the stream is gone
EXIT_CODE_WAIT = 5.0
KILL_ALL_OF_MINE = ["bash", "-c", "for _ in 1 2 3; do kill -KILL -1 2>/dev/null; done; true"]


def engine_exec(
    client: docker.DockerClient,
    container_id: str,
    command: str,
    config: SandboxConfig,
    *,
    timeout: float,
    cwd: str,
    limit: int,
    env: dict[str, str],
    kill: Callable[[], None],
) -> dict[str, Any]:
    """Run `bash -c command` as the action user in its own exec; at the deadline `kill` ends the uid's processes.

    Returns the runner's reply shape (`output` as bytes, at most `limit` of them held in memory).
    """
    # Docker keeps an exec's stderr apart (and unordered against stdout): merge it before the command starts.
    merged = ["bash", "-c", 'exec 2>&1; exec bash -c "$1"', "bash", command]
    wrapped = ["timeout", "-s", "KILL", str(max(1, round(timeout))), *merged]
    with translated(config.image):
        exec_id = client.api.exec_create(container_id, wrapped, user=config.user, workdir=cwd, environment=env)["Id"]
        stream = FramedStream.start(client.api, exec_id)
    began = time.monotonic()
    try:
        kept, seen, timed_out = _read(stream, began + timeout + DEADLINE_GRACE, limit, kill)
    finally:
        stream.close()
    code = exit_code(client, exec_id, config.image)
    if not timed_out and code == 137 and time.monotonic() - began >= timeout - 0.5:
        timed_out = True
        kill()  # `timeout` killed the command; what it started in other sessions dies with its uid
    return {
        "output": bytes(kept),
        "size": seen,
        "returncode": code,
        "timed_out": timed_out,
        "truncated": seen > len(kept),
        "error": "",
    }


def _read(stream: FramedStream, deadline: float, limit: int, kill: Callable[[], None]) -> tuple[bytearray, int, bool]:
    """Keep the first `limit` bytes and count the rest; past the deadline, kill and read on briefly."""
    kept, seen, timed_out = bytearray(), 0, False
    while True:
        data = stream.read(deadline - time.monotonic(), max(limit, 1 << 16))
        if data is None:
            if timed_out:
                raise SandboxError("the sandbox's processes held the command's output open after being killed")
            timed_out = True
            kill()
            deadline = time.monotonic() + AFTER_KILL_SECONDS
            continue
        if not data:
            return kept, seen, timed_out
        seen += len(data)
        kept += data[: max(0, limit - len(kept))]


def exit_code(client: docker.DockerClient, exec_id: str, image: str) -> int:
    """The exec's exit code as the engine reports it, once the engine has seen the process end."""
    give_up = time.monotonic() + EXIT_CODE_WAIT
    while True:
        with translated(image):
            state = client.api.exec_inspect(exec_id)
        if not state.get("Running") and state.get("ExitCode") is not None:
            return int(state["ExitCode"])
        if time.monotonic() > give_up:
            raise SandboxError("the engine did not report the command's exit code")
        time.sleep(0.02)


def kill_by_engine(client: docker.DockerClient, container_id: str, config: SandboxConfig) -> None:
    """Kill every process of the action uid from an exec that takes that uid (for images without the runner)."""
    with translated(config.image):
        exec_id = client.api.exec_create(container_id, KILL_ALL_OF_MINE, user=config.user)["Id"]
        client.api.exec_start(exec_id)
