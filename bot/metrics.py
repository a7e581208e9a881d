"""Prometheus metrics: webhooks, ledger, queue, worker, model and sandbox (served at GET /metrics)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

DELIVERIES = Counter(
    "minifix_webhook_deliveries_total",
    "Webhook deliveries answered, by event and outcome.",
    ["event", "outcome"],
)
ACCEPT_SECONDS = Histogram(
    "minifix_webhook_accept_seconds",
    "Time from a delivery's body read to its answer (verify, decide, durable record).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
LEDGER_BATCH = Histogram(
    "minifix_ledger_commit_batch_size",
    "Writes committed together by the ledger's group commit.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 512),
)
JOBS_FINISHED = Counter("minifix_jobs_finished_total", "Job runs ended, by final status.", ["status"])
JOBS_RUNNING = Gauge("minifix_jobs_running", "Jobs this process is running now.")
JOB_SECONDS = Histogram(
    "minifix_job_duration_seconds",
    "Wall time of one job run (claim to outcome), by kind.",
    ["kind"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600),
)
QUEUE_DEPTH = Gauge("minifix_queue_depth", "Job ids waiting in the dispatch queue (read at scrape time).")
MODEL_TOKENS = Counter("minifix_model_tokens_total", "Tokens the model read and wrote, by direction.", ["direction"])
MODEL_SECONDS = Histogram(
    "minifix_model_call_seconds",
    "Latency of one model call, retries included.",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160),
)
SANDBOX_EXEC_SECONDS = Histogram(
    "minifix_sandbox_exec_seconds",
    "Latency of one action run in the sandbox (a fresh bash -c).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120),
)


@contextmanager
def job_run(kind: str) -> Iterator[None]:
    """Count a job as running and time it, for as long as the block runs."""
    with JOBS_RUNNING.track_inprogress(), JOB_SECONDS.labels(kind=kind).time():
        yield


def count_tokens(prompt: int, completion: int) -> None:
    """Add one model reply's token counts."""
    MODEL_TOKENS.labels(direction="prompt").inc(prompt)
    MODEL_TOKENS.labels(direction="completion").inc(completion)


def watch_queue(depth: Callable[[], int]) -> None:
    """Read the queue depth from `depth` whenever the metrics are scraped."""
    QUEUE_DEPTH.set_function(depth)


def render() -> tuple[bytes, str]:
    """The metrics in Prometheus text format, and its content type."""
    return generate_latest(), CONTENT_TYPE_LATEST
