"""Webhook accept path under load: the real app under uvicorn, signed `issues.labeled` deliveries, C senders.

Run by hand: `python bench/webhook_accept.py [--deliveries 2000] [--concurrency 16] [--baseline] [--probot]`.
Every delivery is a distinct issue, so each one is a durable ledger row (group commit) plus an enqueue. Prints
throughput, p50 and p99 per server. `--probot` runs the same load against a minimal Probot 14.3.2 app
(bench/probot/, npm-installed on first use) in the same run and prints every other server as ratios to it.
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
from dataclasses import dataclass
from pathlib import Path

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

SECRET = "bench-webhook-secret-8c1d"
ROOT = Path(__file__).resolve().parent.parent
PROBOT_DIR = ROOT / "bench" / "probot"
ANCHOR_RATE, ANCHOR_P99_MS = 1600.0, 25.0  # the field notes' Probot figures, for runs without --probot
SERVER = """
import uvicorn
from bot.web.app import create_app
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


@dataclass(frozen=True)
class Target:
    """One server under test: how to start it and what a successful answer looks like."""

    name: str
    command: list[str]
    cwd: Path
    webhook_path: str
    health_path: str
    status: int
    marker: bytes


@dataclass(frozen=True)
class Result:
    """What one server did under the load."""

    rate: float
    p50_ms: float
    p99_ms: float


def targets(port: int) -> dict[str, Target]:
    """The servers this bench knows, all on `port`."""
    python = [sys.executable, "-c"]
    probot = ["node", "node_modules/probot/bin/probot.js", "run", "./app.js"]
    ours = (ROOT, "/webhook", "/healthz", 202, b'"created":true')
    return {
        "mini-fix": Target("mini-fix", [*python, SERVER.format(port=port)], *ours),
        "baseline": Target("baseline", [*python, BASELINE.format(port=port)], *ours),
        "probot": Target("probot", probot, PROBOT_DIR, "/api/github/webhooks", "/ping", 200, b"ok"),
    }


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


async def sender(target: Target, port: int, work: asyncio.Queue[int], latencies: list[float]) -> None:
    """One keep-alive connection speaking plain HTTP/1.1: the sender costs little CPU next to the server."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while not work.empty():
            body, headers = delivery(work.get_nowait())
            head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            start = f"POST {target.webhook_path} HTTP/1.1\r\nHost: bench\r\n"
            request = f"{start}{head}Content-Length: {len(body)}\r\n\r\n"
            started = time.perf_counter()
            writer.write(request.encode() + body)
            status, answer = await read_response(reader)
            latencies.append(time.perf_counter() - started)
            if status != target.status or target.marker not in answer:
                raise RuntimeError(f"unexpected answer {status}: {answer[:300]!r}")
    finally:
        writer.close()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
    return int(lines[0].split()[1]), await reader.readexactly(length)


async def load(target: Target, port: int, first: int, count: int, concurrency: int) -> tuple[float, list[float]]:
    work: asyncio.Queue[int] = asyncio.Queue()
    for issue in range(first, first + count):
        work.put_nowait(issue)
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(sender(target, port, work, latencies) for _ in range(concurrency)))
    return time.perf_counter() - started, latencies


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("server exited; run it by hand to see why")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("server did not become ready in 30 s")


def throwaway_key() -> str:
    """A fresh RSA key in PEM: Probot refuses to start without one, and this bench never calls GitHub."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return pem.decode()


def install_probot() -> None:
    """Install the pinned Probot into bench/probot/node_modules unless it is already there."""
    if not (PROBOT_DIR / "node_modules" / "probot").is_dir():
        print("installing probot 14.3.2 into bench/probot/node_modules ...", flush=True)
        command = ["npm", "install", "--prefix", str(PROBOT_DIR), "--no-audit", "--no-fund"]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--baseline", action="store_true", help="also run a bare FastAPI app that records nothing")
    parser.add_argument(
        "--probot", action="store_true", help="also run a minimal Probot 14.3.2 app; print ratios to it"
    )
    args = parser.parse_args()
    print(f"load average before the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("mini-fix answers 202 after the durable commit of the ledger row; Probot answers 200 when its")
    print("(empty) issues.labeled handler has finished and records nothing; both log each delivery at info.")
    names = (["probot"] if args.probot else []) + ["mini-fix"] + (["baseline"] if args.baseline else [])
    if args.probot:
        install_probot()
    results = {name: run(name, args) for name in names}
    compare(results)


TITLES = {
    "probot": "minimal Probot 14.3.2 app (probot run, issues.labeled handler that does nothing):",
    "mini-fix": "mini-fix webhook path (verify, decide, group-commit ledger row, enqueue):",
    "baseline": "bare FastAPI/uvicorn (verify + parse + 202, nothing recorded):",
}


def run(name: str, args: argparse.Namespace) -> Result:
    """Start one server, warm it up, measure, stop it, print the numbers."""
    print(TITLES[name], flush=True)
    port = free_port()
    target = targets(port)[name]
    with tempfile.TemporaryDirectory() as data_dir:
        env = {
            **os.environ,
            "MINIFIX_WEBHOOK_SECRET": SECRET,
            "MINIFIX_DATA_DIR": data_dir,
            "MINIFIX_LOG_LEVEL": "INFO",
            # Probot's own settings: the same secret, a throwaway App key, JSON logs at its default level.
            "WEBHOOK_SECRET": SECRET,
            "APP_ID": "1",
            "PRIVATE_KEY": throwaway_key() if name == "probot" else "",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "LOG_LEVEL": "info",
            "LOG_FORMAT": "json",
        }
        log = open(Path(data_dir) / "server.log", "wb")  # noqa: SIM115  # closed below, after the server
        server = subprocess.Popen(target.command, env=env, cwd=target.cwd, stdout=log, stderr=log)
        try:
            wait_ready(f"http://127.0.0.1:{port}{target.health_path}", server)
            asyncio.run(load(target, port, 10_000_000, args.warmup, args.concurrency))
            before = (process_cpu(server.pid), time.process_time())
            elapsed, latencies = asyncio.run(load(target, port, 1, args.deliveries, args.concurrency))
            n = len(latencies)
            cpu = ((process_cpu(server.pid) - before[0]) / n, (time.process_time() - before[1]) / n)
        finally:
            server.terminate()
            server.wait(30)
            log.close()
    return report(elapsed, latencies, args.concurrency, cpu)


def report(elapsed: float, latencies: list[float], concurrency: int, cpu: tuple[float, float]) -> Result:
    ms = sorted(x * 1000 for x in latencies)
    result = Result(len(ms) / elapsed, statistics.median(ms), ms[int(len(ms) * 0.99) - 1])
    print(f"  deliveries={len(ms)} concurrency={concurrency} cores={os.cpu_count()}")
    print(
        f"  throughput={result.rate:.0f}/s  p50={result.p50_ms:.1f} ms  p99={result.p99_ms:.1f} ms  max={ms[-1]:.1f} ms"
    )
    server_ms, sender_ms = cpu[0] * 1000, cpu[1] * 1000
    load = os.getloadavg()[0]
    print(f"  cpu per delivery: server {server_ms:.2f} ms, sender {sender_ms:.2f} ms; load average {load:.1f}")
    return result


def compare(results: dict[str, Result]) -> None:
    """Print every server against Probot measured in this run, or against the field notes' anchor."""
    probot = results.get("probot")
    reference = "Probot (this run)" if probot else "the field notes' Probot anchor (not side by side)"
    rate_ref, p99_ref = (probot.rate, probot.p99_ms) if probot else (ANCHOR_RATE, ANCHOR_P99_MS)
    for name, result in results.items():
        if name != "probot":
            rate, p99 = result.rate / rate_ref, result.p99_ms / p99_ref
            print(f"{name} vs {reference}: throughput {rate:.2f}x (target >= 1.00x), p99 {p99:.2f}x (target <= 1.00x)")


if __name__ == "__main__":
    main()
