"""A scripted OpenAI-compatible chat server on 127.0.0.1: the model side of end-to-end tests.

It speaks the real `/v1/chat/completions` protocol (what vLLM serves), answers from a list of replies
(or a callable that sees the request), and records every request so tests can assert on what the model saw.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Refusal:
    """An HTTP error the server answers instead of a reply (a 429 with `Retry-After`, a 503, ...)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "refused by the script"


# A reply: the assistant's text, a message dict (`content`, `tool_calls`, `reasoning_content`, and the choice's
# `finish_reason` and `usage` fields to report), a Refusal, or a callable returning text or a dict, given the
# messages (or the whole body with `with_body`).
Reply = str | dict[str, Any] | Callable[[Any], Any] | Refusal


class ScriptedModelServer:
    """Serve scripted assistant replies; `.requests` holds each request body, in order."""

    def __init__(
        self,
        replies: Sequence[Reply],
        *,
        model: str = "scripted",
        delay: float = 0.0,
        by_turn: bool = False,
        by_temperature: dict[float, Sequence[Reply]] | None = None,
        with_body: bool = False,
        host: str = "127.0.0.1",
    ) -> None:
        self.replies = list(replies)
        # by_temperature: one script per sampling temperature (several attempts of one job), by turn as above.
        self.by_temperature = {t: list(r) for t, r in (by_temperature or {}).items()}
        self.model = model
        self.delay = delay
        # by_turn: pick the reply by how many assistant turns the history holds, so a run that restarts
        # (a worker killed mid-run) gets the same script again.
        self.by_turn = by_turn
        # with_body: a callable reply is given the whole request body (sampling settings too), not just messages.
        self.with_body = with_body
        self.requests: list[dict[str, Any]] = []
        self.peers: list[str] = []  # the client address of each request, in order (which container asked)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, 0), self._handler())
        # A short poll: `stop` waits for the serving loop's next look (0.5 s by default, at every test's end).
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def api_base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ScriptedModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def next_reply(self, body: dict[str, Any], peer: str = "") -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            self.peers.append(peer)
        replies = self.replies
        if self.by_temperature:
            replies = self.by_temperature.get(float(body.get("temperature", -1.0)), [])
        if self.by_turn or self.by_temperature:
            index = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if index >= len(replies):
            return (
                400,
                {
                    "error": {
                        "message": f"script exhausted after {len(replies)} replies",
                        "type": "invalid_request_error",
                    }
                },
                {},
            )
        reply = replies[index]
        if isinstance(reply, Refusal):
            return reply.status, {"error": {"message": reply.message, "code": reply.status}}, reply.headers
        answer = reply(body if self.with_body else body["messages"]) if callable(reply) else reply
        message = {"content": answer} if isinstance(answer, str) else dict(answer)
        finish_reason = message.pop("finish_reason", "tool_calls" if message.get("tool_calls") else "stop")
        prompt_tokens = sum(len(str(m.get("content", ""))) // 4 + 1 for m in body["messages"])
        completion_tokens = len(answer if isinstance(answer, str) else json.dumps(message)) // 4 + 1
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            **message.pop("usage", {}),
        }
        body_out = {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", **message}}],
            "usage": usage,
        }
        return 200, body_out, {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                answer = server.next_reply(body, self.client_address[0])  # recorded on arrival, answered late
                if server.delay:
                    time.sleep(server.delay)
                with contextlib.suppress(BrokenPipeError):  # the client gave up waiting (a per-call timeout)
                    self._send(*answer)

        return Handler


def bash_reply(command: str, thought: str = "Next step.") -> str:
    """An assistant reply in the text-based format: a thought and one fenced command."""
    return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"


def tool_call_reply(*commands: str, content: str | None = None, **fields: Any) -> dict[str, Any]:
    """An assistant message calling the `bash` tool once per command (ids call_0, call_1, ...), as vLLM sends it."""
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": c})}}
        for i, c in enumerate(commands)
    ]
    return {"content": content, "tool_calls": calls, **fields}
