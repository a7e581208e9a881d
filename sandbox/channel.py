"""The host end of the runner: one attached `docker exec` stream carrying JSON lines both ways."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
from pathlib import Path
from typing import Any

from sandbox.base import SandboxError

RUNNER_PATH = Path(__file__).with_name("runner.py")
# Reads the runner's source from stdin, so the image needs python3 but no file of ours.
BOOTSTRAP = (
    "import sys;n=int(sys.stdin.buffer.readline());"
    "exec(compile(sys.stdin.buffer.read(n),'/opt/mini-fix/runner.py','exec'))"
)
RUNNER_COMMAND = ["python3", "-I", "-S", "-c", BOOTSTRAP]
STARTUP_SECONDS = 10.0
HEADER = struct.Struct(">BxxxL")  # Docker's multiplexed stream header: stream id, 3 pad bytes, payload size
STDOUT, STDERR = 1, 2
STDERR_KEPT = 4096


class RunnerUnavailable(SandboxError):
    """The runner could not be started in this container (e.g. the image has no python3)."""


class RunnerChannel:
    """Requests and replies to the runner over one hijacked exec connection."""

    def __init__(self, sock: socket.socket, keepalive: Any) -> None:
        self._sock = sock
        self._keepalive = keepalive  # the SDK's response object; the connection closes if it is collected
        self._frames = bytearray()
        self._stdout = bytearray()
        self._stderr = bytearray()

    @classmethod
    def open(cls, api: Any, container_id: str, *, user: str, workdir: str) -> RunnerChannel:
        """Start the runner in the container and wait for its greeting."""
        exec_id = api.exec_create(
            container_id, RUNNER_COMMAND, stdin=True, stdout=True, stderr=True, user=user, workdir=workdir
        )["Id"]
        wrapper = api.exec_start(exec_id, socket=True)
        channel = cls(getattr(wrapper, "_sock", wrapper), wrapper)
        try:
            source = RUNNER_PATH.read_bytes()
            channel._send(b"%d\n" % len(source) + source)
            hello = channel._receive(STARTUP_SECONDS)
        except SandboxError as exc:
            channel.close()
            raise RunnerUnavailable(f"the runner did not start: {exc}") from exc
        if not hello.get("ready"):
            channel.close()
            raise RunnerUnavailable(f"the runner did not start: unexpected greeting {hello!r}")
        return channel

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait up to `timeout` seconds for its reply."""
        self._send(json.dumps(message).encode("ascii") + b"\n")
        return self._receive(timeout)

    def close(self) -> None:
        """Close the connection; the runner sees end of input and exits."""
        response = getattr(self._keepalive, "_response", None)
        with contextlib.suppress(OSError, ValueError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in another thread; close() does not
        with contextlib.suppress(OSError, ValueError):
            if response is not None:
                response.close()  # first: its reader fails to flush once the socket is gone
            self._keepalive.close()
            self._sock.close()

    def _send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise SandboxError(f"lost the connection to the sandbox runner: {exc}") from exc

    def _receive(self, timeout: float) -> dict[str, Any]:
        self._sock.settimeout(timeout)
        while (end := self._stdout.find(b"\n")) < 0:
            try:
                data = self._sock.recv(1 << 20)
            except TimeoutError as exc:
                raise SandboxError(f"the sandbox runner did not answer within {timeout:g}s") from exc
            except OSError as exc:
                raise SandboxError(f"lost the connection to the sandbox runner: {exc}") from exc
            if not data:
                detail = self._stderr.decode("utf-8", "replace").strip()
                raise SandboxError("the sandbox runner stopped" + (f": {detail}" if detail else ""))
            self._demux(data)
        line = bytes(self._stdout[:end])
        del self._stdout[: end + 1]
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError as exc:  # e.g. the engine's own "exec failed" message when python3 is missing
            text = line.decode("utf-8", "replace").strip()[:500]
            raise SandboxError(f"the sandbox runner sent something unexpected: {text}") from exc
        return reply

    def _demux(self, data: bytes) -> None:
        """Split Docker's framed stream into the runner's stdout and (the tail of) its stderr."""
        self._frames += data
        while len(self._frames) >= HEADER.size:
            stream, size = HEADER.unpack_from(self._frames)
            if len(self._frames) < HEADER.size + size:
                return
            payload = self._frames[HEADER.size : HEADER.size + size]
            del self._frames[: HEADER.size + size]
            if stream == STDOUT:
                self._stdout += payload
            elif stream == STDERR:
                self._stderr = (self._stderr + payload)[-STDERR_KEPT:]
