"""In-container runner: one long-lived process that runs each requested command in a fresh `bash -c`.

The host sends this file's source to `python3` over an exec's stdin (so any image with python3 works) and
starts it as root with the action uid/gid as arguments. It speaks JSON lines: a request `{"id", "op": "run",
"command", "cwd", "env", "timeout", "limit"}` gets one reply `{"id", "output_b64", "size", "returncode",
"timed_out", "truncated", "error"}`; `{"id", "op": "reap"}` kills every process of the action uid.

Each command runs under the action uid, which cannot signal, ptrace or open the fds of this root process, so
nothing an action does can write to the channel. At a timeout every process of that uid dies (so `setsid -f`
children too): the runner briefly takes the action uid and calls kill(-1). Standard library only, Python 3.7+.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import errno
import json
import os
import pwd
import select
import signal
import subprocess
import sys
import time
from typing import IO, Any

FORK_RETRY_SECONDS = 5.0
DRAIN_SECONDS = 0.5
KILL_ROUNDS = 200
# The runner's real uid while it kills: one no process in the container runs as (so kill(-1) reaches none).
KILLER_UID = 65533
PR_CAPBSET_DROP = 24


def main() -> None:
    """Drop what the actions must never get, then answer requests from stdin until it closes."""
    uid, gid = int(sys.argv[1]), int(sys.argv[2])
    out = sys.stdout.buffer
    problem = confine(uid)
    if problem:
        reply(out, {"ready": False, "error": problem})
        return
    reply(out, {"ready": True, "pid": os.getpid(), "uid": uid})
    env = action_env(uid)
    for line in sys.stdin.buffer:
        answer = handle(line, uid, gid, env)
        reply(out, answer)


def confine(uid: int) -> str:
    """Empty the capability bounding set the actions inherit; a reason when this process cannot run them."""
    if os.geteuid() != 0 or uid == 0:
        return f"the runner must be root and the actions another uid (runner {os.geteuid()}, actions {uid})"
    libc = ctypes.CDLL(None, use_errno=True)
    cap = 0
    while libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 or ctypes.get_errno() != errno.EINVAL:
        if ctypes.get_errno() == errno.EPERM:
            return "the runner lacks CAP_SETPCAP to empty the actions' capability bounding set"
        cap += 1
    return ""


def action_env(uid: int) -> dict[str, str]:
    """The environment a login as the action uid would get (not the runner's HOME=/root)."""
    env = dict(os.environ)
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        env["HOME"] = "/tmp"
        return env
    env.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name)
    return env


def handle(line: bytes, uid: int, gid: int, env: dict[str, str]) -> dict[str, Any]:
    """One request's reply; a bad request must not take the runner down with it."""
    request_id = ""
    try:
        request = json.loads(line)
        request_id = str(request["id"])
        if request.get("op") == "reap":
            kill_uid(uid)
            answer = {"reaped": True, "error": ""}
        else:
            answer = run(request, uid, gid, env)
    except Exception as exc:
        answer = failed(f"bad request: {exc!r}")
    answer["id"] = request_id
    return answer


def reply(out: IO[bytes], message: dict[str, Any]) -> None:
    """Write one JSON line."""
    out.write(json.dumps(message).encode("ascii") + b"\n")
    out.flush()


def run(request: dict[str, Any], uid: int, gid: int, base_env: dict[str, str]) -> dict[str, Any]:
    """Run one command as the action uid and collect its combined output, killing the uid's processes at the timeout."""
    env = dict(base_env)
    env.update(request.get("env") or {})
    try:
        proc = spawn(request["command"], request["cwd"], env, uid, gid)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:  # a missing cwd, a NUL byte in the command
        return failed(f"could not start the command: {exc}")
    output, size, timed_out = collect(proc, float(request["timeout"]), int(request["limit"]), uid)
    return {
        "output_b64": base64.b64encode(output).decode("ascii"),
        "size": size,
        "returncode": shell_code(proc.returncode),
        "timed_out": timed_out,
        "truncated": size > len(output),
        "error": "",
    }


def shell_code(returncode: int) -> int:
    """A death by signal N reads 128+N, as a shell (and `docker exec`) reports it."""
    return 128 - returncode if returncode < 0 else returncode


def failed(message: str) -> dict[str, Any]:
    """The reply for a request that could not be run at all."""
    encoded = base64.b64encode(message.encode("utf-8", "replace")).decode("ascii")
    return {
        "output_b64": encoded,
        "size": 0,
        "returncode": -1,
        "timed_out": False,
        "truncated": False,
        "error": message,
    }


def drop_to(uid: int, gid: int) -> None:
    """In the child, before exec: no supplementary groups, then gid, then uid (which clears every capability)."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def spawn(command: str, cwd: str, env: dict[str, str], uid: int, gid: int) -> subprocess.Popen[bytes]:
    """Start `bash -c command` as the action uid in a new session; retry while a pids limit refuses the fork."""
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
                preexec_fn=lambda: drop_to(uid, gid),  # safe: this process has a single thread
            )
        except BlockingIOError:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.05)


def collect(proc: subprocess.Popen[bytes], timeout: float, limit: int, uid: int) -> tuple[bytes, int, bool]:
    """Read output until EOF and exit, or until the deadline; returns (kept output, bytes seen, timed_out)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    kept = bytearray()
    seen = 0
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
            return bytes(kept), seen, False
        seen += len(data)
        kept += data[: max(0, limit - len(kept))]
    kill_uid(uid)
    proc.wait()
    tail = drain(fd)
    seen += len(tail)
    kept += tail[: max(0, limit - len(kept))]
    proc.stdout.close()
    return bytes(kept), seen, True


def read_until(fd: int, deadline: float) -> bytes | None:
    """One chunk from `fd`, b"" at EOF, None when the deadline passes first."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    ready, _, _ = select.select([fd], [], [], remaining)
    if not ready:
        return None
    return os.read(fd, 65536)


def drain(fd: int) -> bytes:
    """What the killed command had already written, without waiting long on anything."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + DRAIN_SECONDS
    while True:
        data = read_until(fd, deadline)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid`, whatever session or group it moved to.

    This process takes `uid` as its effective uid, KILLER_UID as its real uid and keeps 0 as its saved uid (to
    come back), then calls kill(-1): the kernel signals every process whose real or saved uid is `uid`, in one
    pass new forks cannot slip past, and nothing else (the runner and the container's main process are uid 0).
    The action's uid can never signal this process: kill(2) lets a sender whose real or effective uid equals the
    target's real or saved uid, and here those are KILLER_UID and 0, never `uid`. No fork: a fork bomb at the
    pids limit must not stop its own killing. Actions still cannot open this process's fds (every uid must match).
    """
    os.setresuid(KILLER_UID, uid, 0)
    try:
        done = kill_all_of(uid)
    finally:
        os.setresuid(0, 0, 0)
    if not done:
        raise RuntimeError(f"processes of uid {uid} survived {KILL_ROUNDS} rounds of SIGKILL")


def kill_all_of(uid: int) -> bool:
    """kill(-1, SIGKILL) until no live process of `uid` is left."""
    me = os.getpid()
    for _ in range(KILL_ROUNDS):
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        if not live_processes(uid, me):
            return True
        time.sleep(0.005)
    return False


def live_processes(uid: int, me: int) -> list[int]:
    """Live (non-zombie) processes owned by `uid`, other than `me`, read from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            owner = os.stat(f"/proc/{name}").st_uid
            with open(f"/proc/{name}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if owner == uid and state != b"Z":
            found.append(int(name))
    return found


if __name__ == "__main__":
    main()
