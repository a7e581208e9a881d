"""Webhook accept path under load: the real app under uvicorn, signed `issues.labeled` deliveries, C senders.

Run by hand: `python bench/webhook_accept.py [--deliveries 2000] [--concurrency 16]`. Every delivery is a
distinct issue, so each one is a durable ledger row (group commit) plus an enqueue. Prints throughput, p50 and
p99; the field notes' Probot 14.3.2 anchor on this machine is about 1,600 deliveries/s with p99 about 25 ms.
The server's and the sender's CPU time per delivery are printed too: on a busy machine they explain a bad run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

SECRET = "bench-webhook-secret-8c1d"
PROBOT_RATE, PROBOT_P99_MS = 1600.0, 25.0
SERVER = """
import uvicorn
from bot.app import create_app
from bot.logs import configure_logging
from bot.settings import Settings
settings = Settings()
configure_logging(settings.log_level, "json", settings.secrets)
uvicorn.run(create_app(settings), host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""
# The same stack with nothing durable: verify the signature, parse, answer 202. The floor our path sits on.
BASELINE = """
import json, os
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from githubkit.webhooks import verify
app = FastAPI()
secret = os.environ["MINIFIX_WEBHOOK_SECRET"]
@app.post("/webhook")
async def webhook(request: Request) -> JSONResponse:
    body = await request.body()
    assert verify(secret, body, request.headers["x-hub-signature-256"])
    return JSONResponse({{"issue": json.loads(body)["issue"]["number"], "created": True}}, status_code=202)
@app.get("/healthz")
async def healthz() -> dict[str, bool]:
    return {{"ok": True}}
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def delivery(issue: int) -> tuple[bytes, dict[str, str]]:
    payload = {
        "action": "labeled",
        "label": {"name": "mini-fix"},
        "issue": {"number": issue, "state": "open", "title": f"Bug {issue}"},
        "repository": {"full_name": "octo/widgets"},
        "installation": {"id": 1},
        "sender": {"login": "alice", "type": "User"},
    }
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": f"bench-{issue}",
        "X-Hub-Signature-256": signature,
        "Content-Type": "application/json",
    }
    return body, headers


async def sender(port: int, work: asyncio.Queue[int], latencies: list[float]) -> None:
    """One keep-alive connection speaking plain HTTP/1.1: the sender costs little CPU next to the server."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while not work.empty():
            body, headers = delivery(work.get_nowait())
            head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            request = f"POST /webhook HTTP/1.1\r\nHost: bench\r\n{head}Content-Length: {len(body)}\r\n\r\n"
            started = time.perf_counter()
            writer.write(request.encode() + body)
            status, answer = await read_response(reader)
            latencies.append(time.perf_counter() - started)
            if status != 202 or b'"created":true' not in answer:
                raise RuntimeError(f"unexpected answer {status}: {answer[:300]!r}")
    finally:
        writer.close()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
    return int(lines[0].split()[1]), await reader.readexactly(length)


async def load(port: int, first: int, count: int, concurrency: int) -> tuple[float, list[float]]:
    work: asyncio.Queue[int] = asyncio.Queue()
    for issue in range(first, first + count):
        work.put_nowait(issue)
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(sender(port, work, latencies) for _ in range(concurrency)))
    return time.perf_counter() - started, latencies


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("server exited; run it by hand to see why")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("server did not become ready in 30 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument(
        "--baseline", action="store_true", help="also run a bare FastAPI app that records nothing"
    )
    args = parser.parse_args()
    print("mini-fix webhook path (verify, decide, group-commit ledger row, enqueue):")
    run(SERVER, args)
    if args.baseline:
        print("bare FastAPI/uvicorn (verify + parse + 202, nothing recorded):")
        run(BASELINE, args)


def run(server_code: str, args: argparse.Namespace) -> None:
    """Start one server, warm it up, measure, stop it, print the numbers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data_dir:
        env = {
            **os.environ,
            "MINIFIX_WEBHOOK_SECRET": SECRET,
            "MINIFIX_DATA_DIR": data_dir,
            "MINIFIX_LOG_LEVEL": "INFO",
        }
        log = open(Path(data_dir) / "server.log", "wb")  # noqa: SIM115  # closed below, after the server
        root = Path(__file__).resolve().parent.parent
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER.format(port=port)], env=env, cwd=root, stderr=log
        )
        try:
            wait_ready(base, server)
            asyncio.run(load(port, 10_000_000, args.warmup, args.concurrency))
            before = (process_cpu(server.pid), time.process_time())
            elapsed, latencies = asyncio.run(load(port, 1, args.deliveries, args.concurrency))
            n = len(latencies)
            cpu = ((process_cpu(server.pid) - before[0]) / n, (time.process_time() - before[1]) / n)
        finally:
            server.terminate()
            server.wait(30)
            log.close()
    report(elapsed, latencies, args.concurrency, cpu)


def report(elapsed: float, latencies: list[float], concurrency: int, cpu: tuple[float, float]) -> None:
    ms = sorted(x * 1000 for x in latencies)
    rate = len(ms) / elapsed
    p50, p99 = statistics.median(ms), ms[int(len(ms) * 0.99) - 1]
    print(f"deliveries={len(ms)} concurrency={concurrency} cores={os.cpu_count()}")
    print(f"throughput={rate:.0f}/s  p50={p50:.1f} ms  p99={p99:.1f} ms  max={ms[-1]:.1f} ms")
    ratio, p99_ratio = rate / PROBOT_RATE, p99 / PROBOT_P99_MS
    print(f"vs the field notes' Probot anchor: throughput {ratio:.2f}x, p99 {p99_ratio:.2f}x")
    server_ms, sender_ms = cpu[0] * 1000, cpu[1] * 1000
    load = os.getloadavg()[0]
    print(f"cpu per delivery: server {server_ms:.2f} ms, sender {sender_ms:.2f} ms; load average {load:.1f}")


if __name__ == "__main__":
    main()
