"""Per-delivery CPU breakdown from a py-spy raw profile of the webhook server (`py-spy record --format raw`).

    .venv/bin/python bench/profile_summary.py PROFILE.txt [--requests N]

Each sample is charged to the first bucket (in the order below) that one of its frames matches, innermost frame
first, so a sample inside the logger called from the route counts as logging, not as the route. With --requests
(the number of deliveries answered while sampling) each bucket is also shown as milliseconds per delivery. With
--thread (a profile recorded with `py-spy --threads`) only the named threads count, e.g. `MainThread` (the event
loop) or `ledger-commit` (the COMMIT and its sync, GIL released: samples there are mostly waiting on the disk).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# (bucket, pattern on "function (file:line)"), first match wins, tried innermost frame outwards.
BUCKETS = [
    ("logging (structlog render + write)", r"structlog/|bot/logs\.py|PrintLogger"),
    ("signature (githubkit verify, hmac)", r"githubkit/webhooks|hmac\.py|_check_signature"),
    ("JSON parse of the body", r"json/decoder|json/__init__.*loads|_parse \(bot"),
    ("ledger: group commit, SQL on the loop", r"bot/ledger/|sqlite3"),
    ("queue: huey enqueue batch", r"bot/queue/|huey/"),
    ("metrics (prometheus_client)", r"prometheus_client|bot/metrics"),
    ("decide + guards (bot/webhooks)", r"bot/webhooks/(issues|decision|policy|guards|lookups|__init__)"),
    ("response rendering (JSONResponse)", r"starlette/responses\.py|json/encoder"),
    ("route body (bot/webhooks/receive.py)", r"bot/webhooks/receive\.py"),
    ("FastAPI/Starlette routing + middleware", r"starlette/|fastapi/"),
    ("uvicorn HTTP protocol (httptools)", r"uvicorn/"),
    ("asyncio event loop", r"asyncio/|uvloop"),
    ("ledger commit thread (COMMIT + fsync, GIL released)", r"concurrent/futures/thread\.py"),
]


def bucket_of(stack: list[str]) -> str:
    for frame in reversed(stack):
        for name, pattern in BUCKETS:
            if re.search(pattern, frame):
                return name
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("--requests", type=int, default=0)
    parser.add_argument("--rate", type=float, default=250.0, help="py-spy's sampling rate (-r)")
    parser.add_argument("--thread", default="", help="only stacks of threads whose name holds this (py-spy --threads)")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    for line in Path(args.profile).read_text(encoding="utf-8").splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if args.thread and not (frames[0].startswith("thread (") and args.thread in frames[0]):
            continue
        counts[bucket_of(frames)] += int(n)
    total = sum(counts.values())
    print(f"{total} samples at {args.rate:.0f} Hz = {total / args.rate:.2f} s of CPU on the sampled threads")
    for name, n in counts.most_common():
        per = f"  {n / args.rate * 1000 / args.requests:6.3f} ms/delivery" if args.requests else ""
        print(f"  {100 * n / total:5.1f}%  {name}{per}")


if __name__ == "__main__":
    main()
