"""A worker's own HTTP port: /metrics (Prometheus), /healthz (liveness) and /readyz (ledger, queue, engine, image)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bot import metrics

Readiness = Callable[[], dict[str, str | None]]


def readiness_answer(problems: dict[str, str | None]) -> tuple[int, dict[str, object]]:
    """The status code and JSON body of a readiness probe: 200 when no check has a problem, else 503."""
    failing = {name: problem for name, problem in problems.items() if problem is not None}
    body: dict[str, object] = {
        "ready": not failing,
        "checks": {name: problem or "ok" for name, problem in problems.items()},
    }
    return (503 if failing else 200), body


def _handler(readiness: Readiness) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                content, content_type = metrics.render()
                self._send(200, content, content_type)
            elif path == "/healthz":  # liveness: the process answers; readiness says whether it can work
                self._json(200, {"ok": True})
            elif path == "/readyz":
                self._json(*readiness_answer(readiness()))
            else:
                self._json(404, {"error": "not found"})

        def _json(self, status: int, body: dict[str, object]) -> None:
            self._send(status, json.dumps(body).encode(), "application/json")

        def _send(self, status: int, content: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


def serve(port: int, readiness: Readiness, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve the worker's port from a daemon thread; the server, to shut down."""
    server = ThreadingHTTPServer((host, port), _handler(readiness))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="worker-http", daemon=True).start()
    return server
