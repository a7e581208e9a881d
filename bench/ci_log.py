"""Reading a large Actions job log: the whole body read into memory (before) against the capped stream (after).

A local HTTP server plays GitHub: it mints an installation token, answers the job-log route with a 302 to a
"blob" URL, and serves a log of --mib MiB from there, sending the whole log (a server that ignores the Range, the
worst case for the capped reader) or, with --range, the part the Range asks for. Each reader runs in its own
process (`--child`), so its peak RSS (getrusage ru_maxrss) is its own; the time is the gateway call's wall time.

    .venv/bin/python bench/ci_log.py [--mib 256]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LINE = b"2026-01-01T00:00:00.0000000Z some output of a noisy build step that goes on and on\n"
END = b"AssertionError: 6 != 5\n##[error]Process completed with exit code 1.\n"
CHUNK = LINE * ((1 << 20) // len(LINE))  # about 1 MiB


def serve(mib: int, honour_range: bool) -> ThreadingHTTPServer:
    """GitHub's three routes for a job log, on a free local port, in a thread."""
    total = len(CHUNK) * mib + len(END)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.dumps({"token": "ghs_bench", "expires_at": "2099-01-01T00:00:00Z"}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.endswith("/logs"):
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/blob")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            wanted = re.fullmatch(r"bytes=-(\d+)", self.headers.get("Range", ""))
            if honour_range and wanted:
                start = max(0, total - int(wanted.group(1)))
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{total - 1}/{total}")
                self.send_header("Content-Length", str(total - start))
                self.end_headers()
                whole = (CHUNK * 2 + END)[-(total - start) :] if total - start <= 2 * len(CHUNK) else None
                if whole is None:
                    raise RuntimeError("the bench's Range answers are at most two chunks")
                self.wfile.write(whole)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(total))
            self.end_headers()
            try:
                for _ in range(mib):
                    self.wfile.write(CHUNK)
                self.wfile.write(END)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the capped reader stops early

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def child(mode: str, port: int) -> None:
    """Read the log one way; print wall seconds, peak RSS (MiB) and the text's size as JSON."""
    from bot.github.app import GitHubApp
    from bot.github.errors import translated
    from bot.pipeline.task.ci_evidence import log_tail
    from bot.settings import Settings
    from tests.support.fake_github import throwaway_key

    settings = Settings(app_id=99, private_key=throwaway_key(), github_api_url=f"http://127.0.0.1:{port}")
    gh = GitHubApp(settings).for_repo(7, "acme/w")
    started = time.perf_counter()
    if mode == "before":  # the code before issue 32 #7, verbatim
        with translated("reading a job's log"):
            resp = gh._checks().request("GET", f"{gh._prefix}/actions/jobs/11/logs")
        text = resp.raw_response.text
    else:
        text = gh.job_log(11)
    read = time.perf_counter() - started
    quoted = log_tail(text)  # what the CI follow-up does with it next
    seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ok = text.endswith(END.decode())
    result = {"read_s": read, "seconds": seconds, "rss_mib": rss, "chars": len(text), "ends_with_failure": ok}
    print(json.dumps(result | {"quoted_has_failure": "6 != 5" in quoted}))


def measure(mode: str, port: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--port", str(port)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"the {mode} reader failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def baseline_rss() -> float:
    """Peak RSS of a child that imports the same modules and reads nothing (the interpreter and imports)."""
    code = (
        "import resource, bot.github.app, bot.settings, tests.support.fake_github;"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--child", choices=["before", "after"])
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.port)
        return
    print(f"log: {args.mib} MiB + the failure at its end; imports alone: {baseline_rss():.0f} MiB peak RSS")
    print(f"{'server':<28} {'reader':<8} {'read s':>7} {'total s':>12} {'peak RSS MiB':>13} {'text kept':>10} "
          f"{'failure quoted':>15}")  # fmt: skip
    for honour in (False, True):
        server = serve(args.mib, honour)
        try:
            for mode in ("before", "after"):
                r = measure(mode, server.server_address[1])
                label = "honours Range" if honour else "ignores Range (whole log)"
                kept = f"{r['chars'] / (1 << 20):.2f} Mi"
                print(f"{label:<28} {mode:<8} {r['read_s']:>7.2f} {r['seconds']:>12.2f} {r['rss_mib']:>13.0f} "
                      f"{kept:>10} {r['quoted_has_failure']!s:>15}")  # fmt: skip
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
