"""Prometheus metrics: webhooks, ledger, queue, worker, model and sandbox (served at GET /metrics)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bot.jobs import JobStatus

Fleet = Callable[[], tuple[dict[str, int], float | None]]  # Ledger.fleet

DELIVERIES = Counter(
    "minifix_webhook_deliveries_total",
    "Webhook deliveries answered, by event, outcome and forge (github, gitlab).",
    ["event", "outcome", "forge"],
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
FOLLOWUPS = Counter(
    "minifix_followups_total", "Follow-up jobs ended, by trigger (ci, review) and final status.", ["trigger", "outcome"]
)
SETUP_CACHE = Counter(
    "minifix_setup_cache_total",
    "Uses of the setup cache: hit (restored), miss (setup ran), store (saved), skip (could not be used or saved).",
    ["result"],
)
JOBS_RUNNING = Gauge("minifix_jobs_running", "Jobs this process is running now.")
# Only a process with a worker exports it (a labelled gauge has no series until set): dashboards select workers
# with it, so API-only replicas, whose minifix_jobs_running is always 0, are not counted as workers.
WORKER_SLOTS = Gauge(
    "minifix_worker_slots", "Job slots of this process's worker (absent in API-only processes).", ["role"]
)
JOB_SECONDS = Histogram(
    "minifix_job_duration_seconds",
    "Wall time of one job run (claim to outcome), by kind.",
    ["kind"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600),
)
QUEUE_WAIT_SECONDS = Histogram(
    "minifix_job_queue_wait_seconds",
    "Time a job waited from its delivery to a worker's claim (first attempts).",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 1800),
)
QUEUE_DEPTH = Gauge("minifix_queue_depth", "Job ids waiting in the dispatch queue (read at scrape time).")
MODEL_TOKENS = Counter("minifix_model_tokens_total", "Tokens the model read and wrote, by direction.", ["direction"])
MODEL_SECONDS = Histogram(
    "minifix_model_call_seconds",
    "Latency of one model call, retries included.",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160),
)
USAGE_TOKENS = Counter(
    "minifix_usage_tokens_total",
    "Model tokens runs used, by installation and direction.",
    ["installation", "direction"],
)
USAGE_MODEL_SECONDS = Counter(
    "minifix_usage_model_seconds_total", "Seconds runs waited on the model, by installation.", ["installation"]
)
USAGE_COST = Counter(
    "minifix_usage_cost_total", "Cost of runs' model calls (the operator's prices, else litellm's).", ["installation"]
)
USAGE_SANDBOX_CPU = Counter(
    "minifix_usage_sandbox_cpu_seconds_total", "CPU-seconds of runs' sandboxes, by installation.", ["installation"]
)
USAGE_WALL_SECONDS = Counter(
    "minifix_usage_wall_seconds_total", "Wall time of runs (claim to outcome), by installation.", ["installation"]
)
TRAJECTORY_WRITE_FAILURES = Counter(
    "minifix_trajectory_write_failures_total",
    "Trajectory saves the App's own storage refused (a full disk, an I/O error); the runs went on.",
)
DATA_DIR_FREE = Gauge("minifix_data_dir_free_bytes", "Free bytes on the data directory's filesystem (read at scrape).")
SANDBOX_EXEC_SECONDS = Histogram(
    "minifix_sandbox_exec_seconds",
    "Latency of one action run in the sandbox (a fresh bash -c).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120),
)


# (repo, model, merged, merged after a person pushed to the branch) of each closed mini-fix PR.
ClosedPrs = Callable[[], Iterable[tuple[str, str, bool, bool]]]


class PrOutcomes(Collector):
    """Closed and merged mini-fix PRs by repository and model, read from the ledger at scrape time."""

    def __init__(self) -> None:
        self.source: ClosedPrs | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """Two gauges; their ratio is the merge rate (PromQL: merged / closed)."""
        labels = ["repo", "model"]
        closed = GaugeMetricFamily("minifix_pull_requests_closed", "mini-fix PRs closed, merged or not.", labels=labels)
        merged = GaugeMetricFamily(
            "minifix_pull_requests_merged",
            "mini-fix PRs merged; `after_human_push` says whether a person pushed to the branch first.",
            labels=[*labels, "after_human_push"],
        )
        counts: dict[tuple[str, ...], int] = {}
        for repo, model, was_merged, pushed in self.source() if self.source else ():
            counts[("closed", repo, model)] = counts.get(("closed", repo, model), 0) + 1
            if was_merged:
                key = ("merged", repo, model, str(pushed).lower())
                counts[key] = counts.get(key, 0) + 1
        for (kind, *values), n in sorted(counts.items()):
            (closed if kind == "closed" else merged).add_metric(values, n)
        yield closed
        yield merged


PR_OUTCOMES = PrOutcomes()
REGISTRY.register(PR_OUTCOMES)


def watch_pr_outcomes(source: ClosedPrs) -> None:
    """Read the closed PRs from `source` whenever the metrics are scraped."""
    PR_OUTCOMES.source = source


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


def watch_data_dir(path: Path) -> None:
    """Read the free space under `path` whenever the metrics are scraped (-1 when it cannot be read)."""

    def free() -> float:
        try:
            return float(shutil.disk_usage(path).free)
        except OSError:
            return -1.0

    DATA_DIR_FREE.set_function(free)


class FleetCollector(Collector):
    """Gauges read from the ledger at scrape time: the same on every API replica, whichever worker ran what."""

    def __init__(self, fleet: Fleet, clock: Callable[[], float] = time.time) -> None:
        self.fleet, self.clock = fleet, clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """minifix_fleet_jobs{status}, minifix_fleet_queue_depth, minifix_fleet_oldest_queued_seconds."""
        counts, oldest = self.fleet()
        jobs = GaugeMetricFamily(
            "minifix_fleet_jobs", "Jobs in the ledger, by status (every worker).", labels=["status"]
        )
        for status in JobStatus:
            jobs.add_metric([status.value], counts.get(status.value, 0))
        yield jobs
        queued = counts.get(JobStatus.QUEUED.value, 0)
        yield GaugeMetricFamily("minifix_fleet_queue_depth", "Queued jobs in the ledger (every replica's).", queued)
        age = max(0.0, self.clock() - oldest) if oldest is not None else 0.0
        yield GaugeMetricFamily("minifix_fleet_oldest_queued_seconds", "Age of the oldest queued job.", age)


def fleet_registry(fleet: Fleet) -> CollectorRegistry:
    """A registry of the fleet gauges alone (one per app, added to what /metrics renders)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(fleet))
    return registry


def serve(port: int, host: str = "0.0.0.0") -> None:
    """Serve this process's metrics at http://host:port/metrics from a background thread (a worker's)."""
    start_http_server(port, addr=host)


def render(*extra: CollectorRegistry) -> tuple[bytes, str]:
    """The metrics in Prometheus text format (this process's, then `extra`'s), and its content type."""
    return b"".join(generate_latest(r) for r in (REGISTRY, *extra)), CONTENT_TYPE_LATEST


def count_usage(
    installation: str,
    prompt: int = 0,
    completion: int = 0,
    model_seconds: float = 0.0,
    *,
    cost: float = 0.0,
    cpu_seconds: float = 0.0,
    wall_seconds: float = 0.0,
) -> None:
    """Add one run's use to the usage counters (the ledger's `job_usage` rows are the durable record)."""
    if prompt or completion or model_seconds:
        USAGE_TOKENS.labels(installation=installation, direction="prompt").inc(prompt)
        USAGE_TOKENS.labels(installation=installation, direction="completion").inc(completion)
        USAGE_MODEL_SECONDS.labels(installation=installation).inc(model_seconds)
    if cost:
        USAGE_COST.labels(installation=installation).inc(cost)
    if cpu_seconds:
        USAGE_SANDBOX_CPU.labels(installation=installation).inc(cpu_seconds)
    if wall_seconds:
        USAGE_WALL_SECONDS.labels(installation=installation).inc(wall_seconds)
