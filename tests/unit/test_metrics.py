"""GET /metrics: Prometheus text that prometheus-client's own parser reads, moving as deliveries and jobs happen."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from bot import metrics
from bot.cli.main import _parser
from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker.pool import Worker
from tests.support.app_process import free_port


def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics, keyed by name and sorted labels."""
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def succeed(job: Job, _cancel: threading.Event) -> JobOutcome:
    return JobOutcome(JobStatus.SUCCEEDED, run_id="run-1")


def test_metrics_move_when_a_job_runs(
    client: TestClient, settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    before = scrape(client)
    job = ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", 1, "alice", "d-1")).job
    job_queue.enqueue(job.id)
    queued = scrape(client)
    assert queued["minifix_queue_depth", ()] == before["minifix_queue_depth", ()] + 1

    worker = Worker(settings, ledger, job_queue, succeed)
    assert job_queue.run_next(0)
    worker.stop(timeout=5)
    after = scrape(client)
    finished = ("minifix_jobs_finished_total", (("status", "succeeded"),))
    durations = ("minifix_job_duration_seconds_count", (("kind", "fix"),))
    assert after[finished] == before.get(finished, 0) + 1
    assert after[durations] == before.get(durations, 0) + 1
    assert after["minifix_queue_depth", ()] == before["minifix_queue_depth", ()]
    assert after["minifix_jobs_running", ()] == 0


def test_deliveries_are_counted_by_event_and_decision(
    client: TestClient, deliver: Callable[..., Any], examples: Callable[[str], list[dict[str, Any]]]
) -> None:
    def pings(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
        return sum(v for (name, labels), v in samples.items() if name == "minifix_webhook_deliveries_total"
                   and ("event", "ping") in labels)  # fmt: skip

    before = pings(scrape(client))
    assert deliver(client, "ping", {"zen": "Keep it logically awesome.", "hook_id": 1}).status_code == 200
    samples = scrape(client)
    assert pings(samples) == before + 1
    assert samples["minifix_webhook_accept_seconds_count", ()] >= 1
    for name in ("minifix_model_call_seconds_count", "minifix_sandbox_exec_seconds_count"):
        assert (name, ()) in samples  # declared, so dashboards see them before the first job


def test_fleet_gauges_come_from_the_ledger(client: TestClient, ledger: SqliteLedger) -> None:
    first = ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", 1, "alice", "d-1")).job
    ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", 2, "alice", "d-2"))
    ledger.claim(first.id, "another-host", 60)  # a job some other worker runs: this process never saw it
    samples = scrape(client)
    assert samples["minifix_fleet_jobs", (("status", "queued"),)] == 1
    assert samples["minifix_fleet_jobs", (("status", "running"),)] == 1
    assert samples["minifix_fleet_jobs", (("status", "failed"),)] == 0
    assert samples["minifix_fleet_queue_depth", ()] == 1
    assert ("minifix_fleet_oldest_queued_seconds", ()) in samples


def test_oldest_queued_age_is_now_minus_the_oldest_creation() -> None:
    collector = metrics.FleetCollector(lambda: ({"queued": 3}, 1000.0), clock=lambda: 1042.5)
    values = {f.name: f.samples[0].value for f in collector.collect() if f.name != "minifix_fleet_jobs"}
    assert values == {"minifix_fleet_queue_depth": 3, "minifix_fleet_oldest_queued_seconds": 42.5}
    idle = metrics.FleetCollector(lambda: ({}, None), clock=lambda: 1042.5)
    assert [f.samples[0].value for f in idle.collect() if f.name == "minifix_fleet_oldest_queued_seconds"] == [0]


def test_a_worker_serves_its_own_metrics_port() -> None:
    port = free_port()
    metrics.serve(port, host="127.0.0.1")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    assert "minifix_jobs_running" in text and "minifix_job_queue_wait_seconds_bucket" in text
    assert _parser().parse_args(["worker", "--metrics-port", str(port)]).metrics_port == port


def test_metrics_show_the_data_dirs_free_bytes(client: TestClient, settings: Settings) -> None:
    import shutil

    free = scrape(client)["minifix_data_dir_free_bytes", ()]
    assert free > 0 and abs(free - shutil.disk_usage(settings.data_dir).free) < 512 * 1024**2


def test_only_a_process_with_a_worker_exports_its_slots_for_the_per_worker_panel(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    runner = lambda job, cancel: JobOutcome(JobStatus.SUCCEEDED)  # noqa: E731
    worker = Worker(settings.model_copy(update={"workers": 3}), ledger, job_queue, runner)
    worker.start()
    try:
        assert 'minifix_worker_slots{role="worker"} 3.0' in metrics.render()[0].decode()
    finally:
        worker.stop()
    panel = "sum by (instance) (minifix_jobs_running and on (instance) minifix_worker_slots)"
    assert panel in (Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "mini-fix.json").read_text()


def test_serve_listens_on_this_host_only_unless_told_otherwise() -> None:
    assert _parser().parse_args(["serve"]).host == "127.0.0.1"
    assert _parser().parse_args(["serve", "--host", "0.0.0.0"]).host == "0.0.0.0"
