"""Webhook accept path under wrk: pre-signed `issues.labeled` deliveries replayed from a Lua table, 16 connections.

Run by hand: `python bench/webhook_wrk.py [--duration 10] [--connections 16] [--rounds 2] [--processes 1]`.
wrk (Debian's package) is a C load generator: next to a Python sender it leaves the servers the CPU. Every
request carries its own issue number and delivery id, signed ahead of time, so each one mini-fix accepts is a new
durable ledger row (group commit) before its 202. Each round runs, side by side: wrk against a trivial Node HTTP
server (the generator's own ceiling here), the minimal Probot 14.3.2 app, and `mini-fix serve --no-worker`; the
order alternates between rounds. After each mini-fix run the ledger's rows are counted against wrk's 2xx answers.
Before each mini-fix run the disk's fdatasync latency is sampled in the data dir's file system (what each group
commit waits for), and the server's own metrics give the commits and rows per commit. `--tmpfs-control` adds a
mini-fix run with its data dir on tmpfs, where a sync costs nothing: a control for the CPU-bound rate, not a result.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import hmac
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.webhook_accept import (  # noqa: E402
    BASELINE,
    PROBOT_DIR,
    SECRET,
    free_port,
    install_probot,
    process_cpu,
    throwaway_key,
    wait_ready,
)

TRIVIAL = (
    "require('http').createServer((q,s)=>{q.resume();q.on('end',()=>{s.writeHead(200,"
    "{'content-type':'application/json'});s.end('ok')})}).listen(+process.env.PORT,'127.0.0.1')"
)
# Each wrk thread walks its own stride of the table, so no two requests share an issue or a delivery id.
# The data file's first line is the body's template (two %d: the issue number); then one signature a line.
LUA = """
local sigs, template = {}, nil
for line in io.lines(data) do
  if template == nil then template = line else sigs[#sigs + 1] = line end
end
local n, step, i = #sigs, 1, 0
function setup(thread) thread:set("first", counter); counter = counter + 1 end
counter = 0
function init(args) step = tonumber(args[1]); i = tonumber(args[2]) + tonumber(first) end
function request()
  i = i + step
  local k = (i % n) + 1
  return wrk.format("POST", path, {["Content-Type"]="application/json", ["X-GitHub-Event"]="issues",
    ["X-GitHub-Delivery"]="wrk-" .. k, ["X-Hub-Signature-256"]=sigs[k]}, string.format(template, k, k))
end
"""


@dataclass(frozen=True)
class WrkResult:
    """What wrk saw against one server."""

    rate: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    wrk_cpu_ms: float  # wrk's own CPU per request
    server_cpu_ms: float = 0.0  # the server's CPU (all its threads) per request: steadier than rates on a busy box
    commits: int = 0  # mini-fix's group commits during the measured run (its /metrics)
    rows_per_commit: float = 0.0
    sync_ms: tuple[float, float, float] = (0.0, 0.0, 0.0)  # fdatasync p50, p90, p99 sampled just before the run


def lua_script(count: int, webhook_path: str, data: Path, body_kb: float = 0.0) -> str:
    """Write the body template and `count` signatures to `data`; the Lua that replays the deliveries."""
    payload = {
        "action": "labeled",
        "label": {"name": "mini-fix"},
        # The issue's text pads the body: real deliveries are 5-30 KB, and both apps verify and parse all of it.
        "issue": {"number": 0, "state": "open", "title": "Bug TITLE", "body": "x" * int(body_kb * 1024)},
        "repository": {"full_name": "octo/widgets"},
        "installation": {"id": 1},
        "sender": {"login": "alice", "type": "User"},
    }
    template = json.dumps(payload).replace('"number": 0', '"number": %d').replace("Bug TITLE", "Bug %d")
    lines = [template]
    for issue in range(1, count + 1):
        body = (template % (issue, issue)).encode()
        lines.append("sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest())
    data.write_text("\n".join(lines) + "\n")
    return f'path, data = "{webhook_path}", "{data}"\n' + LUA


def ms(text: str) -> float:
    """wrk's duration (`812.00us`, `1.95ms`, `1.02s`, `1.10m`) in milliseconds."""
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise RuntimeError(f"unexpected wrk duration {text!r}")
    return float(match.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[match.group(2)]


def run_wrk(port: int, script: Path, args: argparse.Namespace, offset: int = 0) -> WrkResult:
    """Run wrk once; parse its rate, latency percentiles and error counts."""
    threads = min(args.threads, args.connections)
    command = ["wrk", f"-t{threads}", f"-c{args.connections}", f"-d{args.duration}s", "--latency"]
    command += ["-s", str(script), f"http://127.0.0.1:{port}", "--", str(threads), str(offset)]
    before = os.times()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    if done.stderr.strip():  # a Lua error makes wrk fall back to plain GETs: never measure those
        raise RuntimeError(f"wrk: {done.stderr.strip()}")
    out = done.stdout
    if "Latency Distribution" not in out:
        raise RuntimeError(f"wrk measured nothing:\n{out}")
    after = os.times()
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = (int(bad.group(1)) if bad else 0) + (sum(map(int, socket_errors.groups())) if socket_errors else 0)
    cpu = (after.children_user + after.children_system) - (before.children_user + before.children_system)
    return WrkResult(
        rate=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        p50_ms=ms(re.search(r"\s50%\s+(\S+)", out).group(1)),  # type: ignore[union-attr]
        p99_ms=ms(re.search(r"\s99%\s+(\S+)", out).group(1)),  # type: ignore[union-attr]
        requests=requests,
        errors=errors,
        wrk_cpu_ms=cpu * 1000 / max(1, requests),
    )


def sync_latency(directory: Path, samples: int = 200) -> tuple[float, float, float]:
    """fdatasync after a 4 KiB overwrite in `directory` (a group commit's WAL sync): p50, p90, p99 in ms."""
    path = directory / "sync-probe"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, b"\0" * (64 << 12), 0)
        os.fsync(fd)
        took = []
        for n in range(samples):
            os.pwrite(fd, b"x" * 4096, (n % 64) << 12)
            start = time.perf_counter()
            os.fdatasync(fd)
            took.append((time.perf_counter() - start) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    q = statistics.quantiles(took, n=100)
    return q[49], q[89], q[98]


def commit_counts(port: int) -> tuple[float, float]:
    """mini-fix's group-commit histogram so far: (commits, rows)."""
    found = {"count": 0.0, "sum": 0.0}
    for line in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text.splitlines():
        for key in found:
            if line.startswith(f"minifix_ledger_commit_batch_size_{key} "):
                found[key] = float(line.split()[1])
    return found["count"], found["sum"]


def server_command(name: str, port: int) -> tuple[list[str], Path, str, str]:
    """How to start one server: command, working directory, webhook path, health path."""
    if name == "mini-fix-tmpfs":
        name = "mini-fix"
    if name == "before":  # mini-fix from another checkout (PYTHONPATH set in `environment`), same venv
        serve = [sys.executable, "-m", "bot.cli.main", "serve", "--no-worker", "--host", "127.0.0.1"]
        return [*serve, "--port", str(port)], BEFORE_TREE[0], "/webhook", "/healthz"
    if name == "trivial":
        return ["node", "-e", TRIVIAL], ROOT, "/", ""
    if name == "probot":
        return (
            ["node", "node_modules/probot/bin/probot.js", "run", "./app.js"],
            PROBOT_DIR,
            "/api/github/webhooks",
            "/ping",
        )
    if name == "baseline":
        return [sys.executable, "-c", BASELINE.format(port=port)], ROOT, "/webhook", "/healthz"
    serve = [sys.executable, "-m", "bot.cli.main", "serve", "--no-worker", "--host", "127.0.0.1"]
    return [*serve, "--port", str(port)], ROOT, "/webhook", "/healthz"


def environment(port: int, data_dir: str, name: str) -> dict[str, str]:
    """Both apps' settings: the same secret, JSON logs at info; Probot gets a throwaway App key."""
    return {
        **os.environ,
        "MINIFIX_WEBHOOK_SECRET": SECRET,
        "MINIFIX_DATA_DIR": data_dir,
        "MINIFIX_LOG_LEVEL": "INFO",
        "MINIFIX_LOG_FORMAT": "json",
        "WEBHOOK_SECRET": SECRET,
        "APP_ID": "1",
        "PRIVATE_KEY": throwaway_key() if name == "probot" else "",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "LOG_LEVEL": "info",
        "LOG_FORMAT": "json",
        **({"PYTHONPATH": str(BEFORE_TREE[0])} if name == "before" else {}),
    }


MINI_FIX = ("mini-fix", "before", "mini-fix-tmpfs")


def measure(name: str, args: argparse.Namespace, count: int) -> WrkResult:
    """Start one server, warm it with a short wrk run, measure, count what it recorded, stop it."""
    port = free_port()
    command, cwd, webhook_path, health = server_command(name, port)
    on_tmpfs = "/dev/shm" if name == "mini-fix-tmpfs" else None
    with tempfile.TemporaryDirectory(dir=on_tmpfs) as data_dir:
        script = Path(data_dir) / "deliveries.lua"
        script.write_text(lua_script(count, webhook_path, Path(data_dir) / "deliveries.txt", args.body_kb))
        log = open(Path(data_dir) / "server.log", "wb")  # noqa: SIM115  # closed below, after the server
        server = subprocess.Popen(command, env=environment(port, data_dir, name), cwd=cwd, stdout=log, stderr=log)
        try:
            wait_ready(f"http://127.0.0.1:{port}{health}", server)
            warm = argparse.Namespace(**{**vars(args), "duration": 1})
            warmed = run_wrk(port, script, warm, offset=count // 2)  # its own half of the table
            ours = name in MINI_FIX
            sync = sync_latency(Path(data_dir)) if ours else (0.0, 0.0, 0.0)
            commits = commit_counts(port) if ours else (0.0, 0.0)
            cpu = process_cpu(server.pid)
            result = run_wrk(port, script, args)
            per = (process_cpu(server.pid) - cpu) * 1000 / max(1, result.requests)
            result = dataclasses.replace(result, server_cpu_ms=per, sync_ms=sync)
            if ours:
                after = commit_counts(port)
                done, rows = after[0] - commits[0], after[1] - commits[1]
                result = dataclasses.replace(result, commits=int(done), rows_per_commit=rows / max(1.0, done))
                check_recorded(Path(data_dir), warmed.requests + result.requests - result.errors, count)
        finally:
            server.terminate()
            server.wait(30)
            log.close()
    return result


def check_recorded(data_dir: Path, answered: int, count: int) -> None:
    """Every 2xx mini-fix gave is a ledger row (distinct issues, unless wrk wrapped round the table)."""
    ledger = data_dir / "mini-fix.db"  # the default MINIFIX_DATABASE_URL in MINIFIX_DATA_DIR
    with sqlite3.connect(ledger) as conn:
        rows = conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
    wrapped = " (wrk ran past its half of the table: raise --table)" if answered > count // 2 else ""
    print(f"  ledger rows {rows} for {answered} accepted deliveries{wrapped}")
    if rows < min(answered, count):
        raise RuntimeError(f"{answered} deliveries answered 2xx but only {rows} ledger rows")


BEFORE_TREE: list[Path] = []
TITLES = {
    "trivial": "trivial Node HTTP server (200 'ok', no verify): wrk's own ceiling on this machine",
    "probot": "minimal Probot 14.3.2 app (issues.labeled handler that does nothing; records nothing)",
    "baseline": "bare FastAPI/uvicorn, one process (verify + json parse + 202, records nothing): our stack's floor",
    "before": "mini-fix serve --no-worker from the --before checkout (the same path before this branch's changes)",
    "mini-fix": "mini-fix serve --no-worker (verify, decide, durable group-commit ledger row, enqueue, 202)",
    "mini-fix-tmpfs": "CONTROL, not a result: mini-fix with its data dir on tmpfs (a sync costs nothing there)",
}


def show(name: str, result: WrkResult) -> None:
    print(
        f"  {name:9} {result.rate:7.0f}/s  p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms  "
        f"requests {result.requests}  errors {result.errors}  cpu/req server {result.server_cpu_ms:.3f} ms "
        f"wrk {result.wrk_cpu_ms:.3f} ms  "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    if result.commits:
        p50, p90, p99 = result.sync_ms
        print(
            f"            {result.commits} commits ({result.commits / max(1, result.requests) * 1000:.0f} per 1,000 "
            f"deliveries), {result.rows_per_commit:.2f} rows per commit; fdatasync here just before: "
            f"p50 {p50:.2f} p90 {p90:.2f} p99 {p99:.2f} ms",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds of each measured wrk run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (one keeps wrk to one core here)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--table", type=int, default=100_000, help="distinct signed deliveries in the Lua table")
    parser.add_argument("--body-kb", type=float, default=0.0, help="pad each issue's text to this many KiB")
    parser.add_argument("--only", nargs="*", default=["trivial", "probot", "baseline", "mini-fix"])
    parser.add_argument("--before", type=Path, help="also run mini-fix from this checkout (e.g. a `git archive`)")
    parser.add_argument("--tmpfs-control", action="store_true", help="also run mini-fix with its data on tmpfs")
    args = parser.parse_args()
    if args.tmpfs_control:
        args.only = [*args.only, "mini-fix-tmpfs"]
    if args.before:
        BEFORE_TREE.append(args.before.resolve())
        args.only = [*args.only, "before"]
    print(f"cores {os.cpu_count()}, load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name in args.only:
        print(f"{name}: {TITLES[name]}")
    if "probot" in args.only:
        install_probot()
    results: dict[str, list[WrkResult]] = {name: [] for name in args.only}
    for round_ in range(args.rounds):
        order = args.only if round_ % 2 == 0 else list(reversed(args.only))
        print(f"round {round_ + 1}:")
        for name in order:
            results[name].append(measure(name, args, args.table))
            show(name, results[name][-1])
    summary(results)


def summary(results: dict[str, list[WrkResult]]) -> None:
    """Medians over the rounds, and mini-fix against Probot (measured in the same run)."""
    med = {
        name: (statistics.median(r.rate for r in runs), statistics.median(r.p99_ms for r in runs))
        for name, runs in results.items()
        if runs
    }
    for name, (rate, p99) in med.items():
        cpu = statistics.median(r.server_cpu_ms for r in results[name])
        print(f"median {name:9} {rate:7.0f}/s  p99 {p99:6.2f} ms  server cpu {cpu:.3f} ms/delivery")
    if "probot" in med and "mini-fix" in med:
        (rate, p99), (p_rate, p_p99) = med["mini-fix"], med["probot"]
        print(
            f"mini-fix vs Probot (this run): throughput {rate / p_rate:.2f}x (target >= 1.00x), "
            f"p99 {p99 / p_p99:.2f}x (target <= 1.00x)"
        )
    if "before" in med and "mini-fix" in med:
        print(f"mini-fix vs the --before checkout: throughput {med['mini-fix'][0] / med['before'][0]:.2f}x")
        if "probot" in med:
            print(
                f"--before checkout vs Probot: throughput {med['before'][0] / med['probot'][0]:.2f}x, "
                f"p99 {med['before'][1] / med['probot'][1]:.2f}x"
            )
    if "mini-fix-tmpfs" in med and "mini-fix" in med and "probot" in med:
        control = med["mini-fix-tmpfs"][0]
        print(
            f"CONTROL (data on tmpfs, no real sync; not a result): {control / med['probot'][0]:.2f}x Probot, "
            f"{control / med['mini-fix'][0]:.2f}x mini-fix on disk"
        )
    if "trivial" in med:
        busiest = max(rate for name, (rate, _) in med.items() if name != "trivial")
        print(f"wrk ceiling {med['trivial'][0]:.0f}/s = {med['trivial'][0] / busiest:.1f}x the fastest app measured")


if __name__ == "__main__":
    main()
