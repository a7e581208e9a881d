"""In-container runner: one long-lived process that runs each requested command in a fresh `bash -c`.

The host sends this file's source to `python3` over an exec's stdin (so any image with python3 works), then
speaks JSON lines: a request `{"command", "cwd", "env", "timeout", "limit"}` gets one reply
`{"output", "returncode", "timed_out", "truncated", "error"}`. Each command runs in its own session; at its
timeout the whole session is killed from in here. Standard library only, Python 3.7+ (images carry old ones).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import IO, Any

FORK_RETRY_SECONDS = 5.0
DRAIN_SECONDS = 0.5


def main() -> None:
    """Answer requests from stdin until it closes."""
    out = sys.stdout.buffer
    reply(out, {"ready": True, "pid": os.getpid()})
    for line in sys.stdin.buffer:
        try:
            answer = run(json.loads(line))
        except Exception as exc:  # one bad request must not take the runner down with it
            answer = failed(f"bad request: {exc!r}")
        reply(out, answer)


def reply(out: IO[bytes], message: dict[str, Any]) -> None:
    """Write one JSON line (ASCII; undecodable output bytes travel as surrogate escapes)."""
    out.write(json.dumps(message).encode("ascii") + b"\n")
    out.flush()


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Run one command and collect its combined output, killing its session at the timeout."""
    env = dict(os.environ)
    env.update(request.get("env") or {})
    try:
        proc = spawn(request["command"], request["cwd"], env)
    except (OSError, ValueError) as exc:  # e.g. a missing cwd, or a NUL byte in the command
        return failed(f"could not start the command: {exc}")
    output, truncated, timed_out = collect(proc, float(request["timeout"]), int(request["limit"]))
    return {
        "output": output.decode("utf-8", "surrogateescape"),
        "returncode": shell_code(proc.returncode),
        "timed_out": timed_out,
        "truncated": truncated,
        "error": "",
    }


def shell_code(returncode: int) -> int:
    """A death by signal N reads 128+N, as a shell (and `docker exec`) reports it."""
    return 128 - returncode if returncode < 0 else returncode


def failed(message: str) -> dict[str, Any]:
    """The reply for a request that could not be run at all."""
    return {"output": message, "returncode": -1, "timed_out": False, "truncated": False, "error": message}


def spawn(command: str, cwd: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start `bash -c command` in a new session; retry while a pids limit refuses the fork."""
    give_up = time.monotonic() + FORK_RETRY_SECONDS
    while True:
        try:
            return subprocess.Popen(
                ["bash", "-c", command],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BlockingIOError:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.05)


def collect(proc: subprocess.Popen[bytes], timeout: float, limit: int) -> tuple[bytes, bool, bool]:
    """Read output until EOF and exit, or until the deadline; returns (output, truncated, timed_out)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    kept = 0
    truncated = False
    fd = proc.stdout.fileno()
    while True:
        data = read_until(fd, deadline)
        if data is None:
            break
        if not data:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
            proc.stdout.close()
            return b"".join(chunks), truncated, False
        room = max(0, limit - kept)
        chunks.append(data[:room])
        kept += min(room, len(data))
        truncated = truncated or len(data) > room
    kill_session(proc.pid)
    proc.wait()
    tail = drain(fd, max(0, limit - kept))
    proc.stdout.close()
    return b"".join(chunks) + tail, truncated, True


def read_until(fd: int, deadline: float) -> bytes | None:
    """One chunk from `fd`, b"" at EOF, None when the deadline passes first."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    ready, _, _ = select.select([fd], [], [], remaining)
    if not ready:
        return None
    return os.read(fd, 65536)


def drain(fd: int, room: int) -> bytes:
    """What the killed command had already written, without waiting on anything that escaped the kill."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + DRAIN_SECONDS
    while True:
        data = read_until(fd, deadline)
        if not data:
            return b"".join(chunks)[:room]
        chunks.append(data)


def kill_session(sid: int) -> None:
    """SIGKILL every live process of the session `sid` (its process group first, then stragglers)."""
    for _ in range(50):
        with contextlib.suppress(OSError):
            os.killpg(sid, signal.SIGKILL)
        members = session_members(sid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is `sid`, read from /proc."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z" and int(fields[3]) == sid:
            members.append(int(name))
    return members


if __name__ == "__main__":
    main()
