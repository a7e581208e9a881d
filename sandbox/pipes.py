"""Byte streams through an engine exec, as the action user: a command's stdout into a host file, a host file into
a command's stdin. The bytes are never parsed on the host: what a sandbox writes is only counted and stored."""

from __future__ import annotations

import time
from typing import IO

import docker

from sandbox.base import SandboxConfig, SandboxError
from sandbox.channel import FramedStream
from sandbox.engine import translated
from sandbox.engine_exec import exit_code

CHUNK = 1 << 20


class StreamTooLarge(SandboxError):
    """A command wrote more than the bytes the host takes from it."""


def _start(client: docker.DockerClient, container_id: str, command: str, config: SandboxConfig, *, timeout: float,
           stdin: bool) -> tuple[str, FramedStream]:  # fmt: skip
    wrapped = ["timeout", "-s", "KILL", str(max(1, round(timeout))), "bash", "-c", command]
    with translated(config.image):
        exec_id = client.api.exec_create(
            container_id, wrapped, stdin=stdin, user=config.user, workdir=config.cwd, environment=config.env
        )["Id"]
        return exec_id, FramedStream.start(client.api, exec_id)


def stream_out(
    client: docker.DockerClient,
    container_id: str,
    command: str,
    config: SandboxConfig,
    out: IO[bytes],
    *,
    max_bytes: int,
    timeout: float,
) -> int:
    """Write `bash -c command`'s stdout to `out`; the bytes written. StreamTooLarge past `max_bytes`,
    SandboxError when the command fails or outlives `timeout` (its stderr's tail in the message)."""
    exec_id, stream = _start(client, container_id, command, config, timeout=timeout, stdin=False)
    deadline, written = time.monotonic() + timeout + 1, 0
    try:
        while (data := stream.read(deadline - time.monotonic(), CHUNK)) != b"":
            if data is None:
                raise SandboxError(f"`{command}` did not finish within {timeout:g}s")
            written += len(data)
            if written > max_bytes:
                raise StreamTooLarge(f"the stream is larger than {max_bytes:,} bytes")
            out.write(data)
    finally:
        stream.close()  # a command still writing is killed by its `timeout`, or by the sandbox's close
    _succeeded(client, exec_id, config, stream)
    return written


def stream_in(
    client: docker.DockerClient, container_id: str, command: str, config: SandboxConfig, src: IO[bytes], *,
    timeout: float,
) -> None:  # fmt: skip
    """Feed `src` to `bash -c command`'s stdin, then end it; SandboxError when the command fails."""
    exec_id, stream = _start(client, container_id, command, config, timeout=timeout, stdin=True)
    deadline = time.monotonic() + timeout + 1
    try:
        while data := src.read(CHUNK):
            stream.settimeout(max(deadline - time.monotonic(), 0.001))
            stream.send(data)
        stream.end_input()
        while (reply := stream.read(deadline - time.monotonic(), CHUNK)) != b"":
            if reply is None:
                raise SandboxError(f"`{command}` did not finish within {timeout:g}s")
    finally:
        stream.close()
    _succeeded(client, exec_id, config, stream)


def _succeeded(client: docker.DockerClient, exec_id: str, config: SandboxConfig, stream: FramedStream) -> None:
    code = exit_code(client, exec_id, config.image)
    if code != 0:
        raise SandboxError(f"exit code {code}: {stream.stderr_tail()[-1000:]}")
