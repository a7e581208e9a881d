"""Prometheus metrics of the webhook path, the ledger and the worker (served at GET /metrics)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

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


def render() -> tuple[bytes, str]:
    """The metrics in Prometheus text format, and its content type."""
    return generate_latest(), CONTENT_TYPE_LATEST
