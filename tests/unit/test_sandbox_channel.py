"""The host end of the runner channel: replies must carry the request's id and stay under their size cap."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from sandbox.base import SandboxError
from sandbox.channel import HEADER, STDOUT, FramedStream, RunnerChannel, reply_cap

FRAME = 32 << 10  # Docker frames what it reads from the exec's pipe in chunks this size
Answer = Callable[[dict[str, object]], bytes]


def _frame(payload: bytes, stream: int = STDOUT) -> bytes:
    return HEADER.pack(stream, len(payload)) + payload


@pytest.fixture
def runner() -> Iterator[Callable[[Answer], RunnerChannel]]:
    """A channel whose far end answers each request line with what `answer` makes of it (framed like Docker)."""
    pairs: list[socket.socket] = []

    def start(answer: Answer) -> RunnerChannel:
        host, far = socket.socketpair()
        pairs.extend((host, far))

        def serve() -> None:
            with far.makefile("rb") as lines:
                for line in lines:
                    try:
                        data = answer(json.loads(line))
                        far.sendall(b"".join(_frame(data[i : i + FRAME]) for i in range(0, len(data), FRAME)))
                    except OSError:
                        return

        threading.Thread(target=serve, daemon=True).start()
        return RunnerChannel(FramedStream(host, host))

    yield start
    for sock in pairs:
        sock.close()


def _ok(request: dict[str, object], output: bytes = b"hi\n") -> bytes:
    reply = {"id": request["id"], "output_b64": base64.b64encode(output).decode(), "size": len(output)}
    return json.dumps({**reply, "returncode": 0, "timed_out": False, "truncated": False, "error": ""}).encode() + b"\n"


def test_a_reply_with_its_request_id_is_accepted(runner: Callable[[Answer], RunnerChannel]) -> None:
    channel = runner(_ok)
    assert channel.run({"command": "echo hi"}, 5, 1024)["output"] == b"hi\n"
    assert channel.run({"command": "echo hi"}, 5, 1024)["returncode"] == 0


def test_a_reply_to_another_request_is_refused_and_the_channel_is_not_used_again(
    runner: Callable[[Answer], RunnerChannel],
) -> None:
    channel = runner(lambda request: _ok({**request, "id": "forged"}))
    with pytest.raises(SandboxError, match="answered request 'forged'"):
        channel.run({"command": "true"}, 5, 1024)
    with pytest.raises(SandboxError, match="answered request 'forged'"):
        channel.run({"command": "true"}, 5, 1024)


def test_a_reply_over_its_cap_is_refused_without_reading_it_all(runner: Callable[[Answer], RunnerChannel]) -> None:
    endless = b"A" * (8 << 20)  # no newline: an unbounded reader would hold all of it
    channel = runner(lambda request: endless)
    with pytest.raises(SandboxError, match=f"reply over {reply_cap(1024)} bytes"):
        channel.run({"command": "true"}, 5, 1024)
    assert len(channel._stdout) < reply_cap(1024) + (1 << 20)


def test_output_longer_than_the_limit_is_cut_on_the_host_too(runner: Callable[[Answer], RunnerChannel]) -> None:
    channel = runner(lambda request: _ok(request, b"z" * 3000))
    assert channel.run({"command": "true"}, 5, 1000)["output"] == b"z" * 1000


def test_one_frame_over_the_cap_is_refused(runner: Callable[[Answer], RunnerChannel]) -> None:
    host, far = socket.socketpair()
    with host, far:
        far.sendall(HEADER.pack(STDOUT, 1 << 30))  # announces a 1 GiB frame
        far.sendall(b"B" * (96 << 10))  # more than the cap, less than the socket buffer
        with pytest.raises(SandboxError, match="frame over"):
            FramedStream(host, host).read(5, 64 << 10)
