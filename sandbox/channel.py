"""The host end of the runner: one attached `docker exec` stream carrying JSON lines both ways."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import time
import uuid
from pathlib import Path
from typing import Any

from sandbox.base import SandboxError

RUNNER_PATH = Path(__file__).with_name("runner.py")
# Reads the runner's source from stdin, so the image needs python3 but no file of ours; argv carries uid and gid.
BOOTSTRAP = (
    "import sys;n=int(sys.stdin.buffer.readline());"
    "exec(compile(sys.stdin.buffer.read(n),'/opt/mini-fix/runner.py','exec'))"
)
RUNNER_COMMAND = ["python3", "-I", "-S", "-c", BOOTSTRAP]
RUNNER_USER = "0:0"  # the runner alone is root; see engine.RUNNER_CAPS for what that root may do
STARTUP_SECONDS = 10.0
HEADER = struct.Struct(">BxxxL")  # Docker's multiplexed stream header: stream id, 3 pad bytes, payload size
STDOUT, STDERR = 1, 2
STDERR_KEPT = 4096
WAKE_SECONDS = 0.5  # how often a blocked read looks whether the stream was closed
CONTROL_REPLY_CAP = 64 << 10  # a greeting or a reap answer
REPLY_OVERHEAD = 64 << 10  # JSON fields and an error message around the base64 output


class RunnerUnavailable(SandboxError):
    """The runner could not be started in this container (e.g. the image has no python3)."""


def reply_cap(limit: int) -> int:
    """The most bytes the host reads for one reply whose output is capped at `limit` bytes (base64 + fields)."""
    return 4 * (limit // 3 + 1) + REPLY_OVERHEAD


class FramedStream:
    """Docker's multiplexed exec stream over a hijacked socket: stdout chunks out, the tail of stderr kept."""

    def __init__(self, sock: socket.socket, keepalive: Any) -> None:
        self._sock = sock
        self._keepalive = keepalive  # the SDK's response object; the connection closes if it is collected
        self._frames = bytearray()
        self._stderr = bytearray()
        self._closed = False

    @classmethod
    def start(cls, api: Any, exec_id: str) -> FramedStream:
        """Start a created exec and attach to it."""
        wrapper = api.exec_start(exec_id, socket=True)
        return cls(getattr(wrapper, "_sock", wrapper), wrapper)

    def send(self, data: bytes) -> None:
        """Write to the exec's stdin."""
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise SandboxError(f"lost the connection to the sandbox: {exc}") from exc

    def read(self, timeout: float, cap: int) -> bytes | None:
        """The next stdout bytes (b"" at end of stream), None when `timeout` passes; at most `cap` buffered.

        The socket is waited on in slices of WAKE_SECONDS: a close() from another thread is seen within one
        slice even where it does not wake a blocked recv (seen under load: a stopped run's reader slept on until
        its command's timeout)."""
        deadline = time.monotonic() + max(timeout, 0.001)
        while True:
            out = self._take_stdout()
            if out:
                return out
            if len(self._frames) > cap + HEADER.size:  # what is left is one frame still incomplete
                raise SandboxError(f"the sandbox sent a frame over {cap} bytes")
            if self._closed:
                raise SandboxError("the connection to the sandbox was closed")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                self._sock.settimeout(min(left, WAKE_SECONDS))
                data = self._sock.recv(min(1 << 20, max(cap, HEADER.size)))
            except TimeoutError:
                continue
            except OSError as exc:
                raise SandboxError(f"lost the connection to the sandbox: {exc}") from exc
            if not data:
                return b""
            self._frames += data

    def settimeout(self, seconds: float) -> None:
        """Bound each later send (a reader sets its own timeouts)."""
        self._sock.settimeout(seconds)

    def end_input(self) -> None:
        """Close the exec's stdin (the write half); its output can still be read."""
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError as exc:
            raise SandboxError(f"lost the connection to the sandbox: {exc}") from exc

    def stderr_tail(self) -> str:
        """The last few KiB the exec wrote to stderr."""
        return self._stderr.decode("utf-8", "replace").strip()

    def close(self) -> None:
        """Close the connection; the process on the other end sees end of input."""
        self._closed = True  # first: a reader in another thread stops at its next slice
        response = getattr(self._keepalive, "_response", None)
        with contextlib.suppress(OSError, ValueError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in another thread; close() does not
        with contextlib.suppress(OSError, ValueError):
            if response is not None:
                response.close()  # first: its reader fails to flush once the socket is gone
            self._keepalive.close()
            self._sock.close()

    def _take_stdout(self) -> bytes:
        """Stdout payload of the complete frames buffered so far; stderr goes to its kept tail."""
        out = bytearray()
        while len(self._frames) >= HEADER.size:
            stream, size = HEADER.unpack_from(self._frames)
            if len(self._frames) < HEADER.size + size:
                break
            payload = self._frames[HEADER.size : HEADER.size + size]
            del self._frames[: HEADER.size + size]
            if stream == STDOUT:
                out += payload
            elif stream == STDERR:
                self._stderr = (self._stderr + payload)[-STDERR_KEPT:]
        return bytes(out)


class RunnerChannel:
    """Requests and replies to the runner, each carrying an id the reply must echo, each reply size-capped."""

    def __init__(self, stream: FramedStream) -> None:
        self._stream = stream
        self._stdout = bytearray()
        self._broken = ""

    @classmethod
    def open(cls, api: Any, container_id: str, *, uid: int, gid: int, workdir: str) -> RunnerChannel:
        """Start the runner in the container (as root, running actions as uid:gid) and wait for its greeting."""
        command = [*RUNNER_COMMAND, str(uid), str(gid)]
        exec_id = api.exec_create(
            container_id, command, stdin=True, stdout=True, stderr=True, user=RUNNER_USER, workdir=workdir
        )["Id"]
        channel = cls(FramedStream.start(api, exec_id))
        try:
            source = RUNNER_PATH.read_bytes()
            channel._stream.send(b"%d\n" % len(source) + source)
            hello = channel._line(STARTUP_SECONDS, CONTROL_REPLY_CAP)
        except SandboxError as exc:
            channel.close()
            raise RunnerUnavailable(f"the runner did not start: {exc}") from exc
        if not hello.get("ready"):
            channel.close()
            raise RunnerUnavailable(f"the runner did not start: {hello.get('error') or hello!r}")
        return channel

    def run(self, request: dict[str, Any], timeout: float, limit: int) -> dict[str, Any]:
        """Run one command (`limit` output bytes kept); the reply's output is decoded to bytes under `output`."""
        reply = self.request({**request, "op": "run", "limit": limit}, timeout, reply_cap(limit))
        try:
            reply["output"] = base64.b64decode(reply.pop("output_b64"), validate=True)[:limit]
        except (KeyError, ValueError, TypeError) as exc:
            raise self._poisoned(f"the sandbox runner's reply has no valid output ({exc})") from exc
        return reply

    def reap(self, timeout: float) -> None:
        """Kill every process of the action uid."""
        reply = self.request({"op": "reap"}, timeout, CONTROL_REPLY_CAP)
        if not reply.get("reaped"):
            raise SandboxError(f"the sandbox runner could not end the actions' processes: {reply.get('error')}")

    def request(self, message: dict[str, Any], timeout: float, cap: int) -> dict[str, Any]:
        """Send one request with a fresh id and wait up to `timeout` seconds for the reply that carries it."""
        if self._broken:
            raise SandboxError(self._broken)
        request_id = uuid.uuid4().hex
        self._stream.send(json.dumps({**message, "id": request_id}).encode("ascii") + b"\n")
        reply = self._line(timeout, cap)
        if reply.get("id") != request_id:
            raise self._poisoned(f"the sandbox runner answered request {reply.get('id')!r}, not {request_id!r}")
        return reply

    def close(self) -> None:
        """Close the connection; the runner sees end of input and exits."""
        self._stream.close()

    def _line(self, timeout: float, cap: int) -> dict[str, Any]:
        """One JSON line from the runner, reading at most `cap` bytes for it."""
        while (end := self._stdout.find(b"\n")) < 0:
            if len(self._stdout) > cap:
                raise self._poisoned(f"the sandbox runner sent a reply over {cap} bytes")
            data = self._stream.read(timeout, cap)
            if data is None:
                raise self._poisoned(f"the sandbox runner did not answer within {timeout:g}s")
            if not data:
                detail = self._stream.stderr_tail()
                raise SandboxError("the sandbox runner stopped" + (f": {detail}" if detail else ""))
            self._stdout += data
        line = bytes(self._stdout[:end])
        del self._stdout[: end + 1]
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError as exc:  # e.g. the engine's own "exec failed" message when python3 is missing
            text = line.decode("utf-8", "replace").strip()[:500]
            raise self._poisoned(f"the sandbox runner sent something unexpected: {text}") from exc
        if not isinstance(reply, dict):
            raise self._poisoned("the sandbox runner sent something other than an object")
        return reply

    def _poisoned(self, message: str) -> SandboxError:
        """A channel that said something wrong is not used again."""
        self._broken = message
        self.close()
        return SandboxError(message)
