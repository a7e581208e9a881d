"""Accounting: a run's model tokens and seconds, sandbox CPU-seconds and wall time, recorded once in the ledger."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from bot import metrics
from bot.agent.config import ModelConfig
from bot.agent.model_base import ModelReply
from bot.cli.main import _parser, _usage
from bot.forge_ids import installation_of
from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import usage
from bot.worker.pool import Worker
from sandbox.base import SandboxConfig
from tests.support.fake_sandbox import FakeSandbox


class CountingModel:
    name = "counting"

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        return ModelReply("ok", prompt_tokens=100, completion_tokens=7)


class BusySandbox(FakeSandbox):
    """A fake sandbox whose engine says it used 1.5 CPU-seconds."""

    def cpu_seconds(self) -> float:
        return 1.5


def metered_runner(calls: int, sandboxes: int = 1) -> Any:
    """A runner that, like the real one, builds its model and sandboxes through the worker's meter."""

    def run(job: Job, cancel: threading.Event) -> JobOutcome:
        meter = usage.active()
        assert meter is not None
        model = meter.models(lambda config: CountingModel())(ModelConfig(model_name="x"))
        for _ in range(calls):
            model.query([{"role": "user", "content": "hi"}])
        for n in range(sandboxes):
            meter.sandboxes(lambda config, run_id: BusySandbox())(SandboxConfig(), f"run-{n}").close()
        return JobOutcome(JobStatus.SUCCEEDED)

    return run


def submit(ledger: SqliteLedger, issue: int = 1, inst: int = 77) -> Job:
    return ledger.submit(JobRequest(JobKind.FIX, inst, "octo/widgets", issue, "alice", f"d-{inst}-{issue}")).job


def sample(name: str, **labels: str) -> float:
    """One counter's value, read from the counter alone (a registry-wide read would also run every collector other
    tests registered, some over ledgers closed since)."""
    counters = {"minifix_usage_tokens_total": metrics.USAGE_TOKENS, "minifix_usage_sandbox_cpu_seconds_total":
                metrics.USAGE_SANDBOX_CPU}  # fmt: skip
    for family in counters[name].collect():
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return 0.0


def test_a_runs_use_is_recorded_in_the_ledger_and_counted(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    job = submit(ledger, inst=4242)
    before = sample("minifix_usage_tokens_total", installation="4242", direction="prompt")
    worker = Worker(settings, ledger, job_queue, metered_runner(calls=3, sandboxes=2))
    assert worker.run_job(job.id) == JobStatus.SUCCEEDED
    [row] = ledger.job_usage(job.id)
    assert row.final and row.attempt == 1 and (row.installation_id, row.repo) == (4242, "octo/widgets")
    assert (row.calls, row.prompt_tokens, row.completion_tokens, row.sandbox_cpu_seconds) == (3, 300, 21, 3.0)
    assert row.wall_seconds > 0 and row.model_seconds >= 0
    assert sample("minifix_usage_tokens_total", installation="4242", direction="prompt") - before == 300
    assert sample("minifix_usage_sandbox_cpu_seconds_total", installation="4242") >= 3.0
    dashboard = (Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "mini-fix.json").read_text()
    assert "sum by (installation) (increase(minifix_usage_tokens_total[1h]))" in dashboard


def test_a_run_resumed_after_its_worker_died_counts_each_call_once(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    job = submit(ledger)
    dead = ledger.claim(job.id, "dead-worker", -1)  # its lease runs out at once: the worker was killed
    assert dead is not None
    meter = usage.JobMeter(dead, ledger.record_usage_nowait)  # what the dead worker metered before it died
    for _ in range(2):
        meter.add_call(ModelReply("ok", prompt_tokens=100, completion_tokens=7), 0.1)
    last_write = meter.use
    worker = Worker(settings, ledger, job_queue, metered_runner(calls=3))
    assert worker.run_job(job.id) == JobStatus.SUCCEEDED  # the next claim takes the dead worker's run over
    assert not ledger.record_usage(last_write)  # the dead claim's write delivered again changes nothing
    rows = ledger.job_usage(job.id)
    assert [(r.attempt, r.calls, r.final) for r in rows] == [(1, 2, False), (2, 3, True)]
    [total] = ledger.usage_totals([])
    assert (total["jobs"], total["calls"], total["prompt_tokens"]) == (1, 5, 500)


def test_the_operators_prices_turn_use_into_cost_else_the_models_own_price(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    priced = settings.model_copy(
        update={"price_per_million_prompt_tokens": 2.0, "price_per_million_completion_tokens": 10.0}
    )
    job = submit(ledger)
    assert Worker(priced, ledger, job_queue, metered_runner(calls=4)).run_job(job.id) == JobStatus.SUCCEEDED
    [row] = ledger.job_usage(job.id)
    assert row.cost == pytest.approx(4 * (100 * 2.0 + 7 * 10.0) / 1e6)
    hosted = ModelReply("ok", prompt_tokens=100, completion_tokens=7, cost=0.25)  # litellm's price of a hosted model
    assert usage.Price().of(hosted, 3.0) == 0.25 and usage.Price(per_model_second=0.5).of(hosted, 3.0) == 1.5


def test_control_jobs_record_no_usage(settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> None:
    job = ledger.submit(JobRequest(JobKind.HELP, 77, "octo/widgets", 1, "alice", "help-1")).job
    worker = Worker(settings, ledger, job_queue, lambda job, cancel: JobOutcome(JobStatus.SUCCEEDED))
    assert worker.run_job(job.id) == JobStatus.SUCCEEDED
    assert ledger.job_usage(job.id) == []


def test_mini_fix_usage_prints_a_table_and_json_lines(
    settings: Settings,
    ledger: SqliteLedger,
    job_queue: JobQueue,
    capsys: pytest.CaptureFixture[str],
) -> None:
    worker = Worker(settings, ledger, job_queue, metered_runner(calls=2))
    for issue in (1, 2):
        assert worker.run_job(submit(ledger, issue).id) == JobStatus.SUCCEEDED
    capsys.readouterr()  # the worker's log lines

    def usage_command(*argv: str) -> int:  # `mini-fix usage ...` with these settings (main would set up logging)
        return _usage(settings, _parser().parse_args(["usage", *argv]))

    assert usage_command("--by", "repo,installation", "--json") == 0
    [line] = capsys.readouterr().out.splitlines()
    row = json.loads(line)
    assert (row["repo"], row["installation"], row["jobs"], row["calls"], row["prompt_tokens"]) == (
        "octo/widgets", 77, 2, 4, 400,
    )  # fmt: skip
    assert usage_command("--by", "repo") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[4:] == ["COMPLETION", "MODEL_S", "COST", "CPU_S", "WALL_S"]
    assert table[0].split()[:4] == ["REPO", "JOBS", "CALLS", "PROMPT"] and table[1].split()[:4] == [
        "octo/widgets", "2", "4", "400",
    ]  # fmt: skip
    assert usage_command("--by", "org") == 2


def test_mini_fix_usage_shows_a_gitlab_project_apart_from_the_github_repository_of_its_path(
    settings: Settings,
    ledger: SqliteLedger,
    job_queue: JobQueue,
    capsys: pytest.CaptureFixture[str],
) -> None:
    worker = Worker(settings, ledger, job_queue, metered_runner(calls=2))
    assert worker.run_job(submit(ledger, 1).id) == JobStatus.SUCCEEDED
    gitlab = installation_of("octo/widgets")
    for issue in (1, 2):  # GitLab's octo/widgets, issue #1 too: another project of another owner
        assert worker.run_job(submit(ledger, issue, inst=gitlab).id) == JobStatus.SUCCEEDED
    capsys.readouterr()

    assert _usage(settings, _parser().parse_args(["usage", "--by", "repo", "--json"])) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["repo"], r["jobs"], r["calls"]) for r in rows] == [("gitlab:octo/widgets", 2, 4), ("octo/widgets", 1, 2)]
    assert _usage(settings, _parser().parse_args(["usage", "--by", "repo"])) == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in table[1:]] == [["gitlab:octo/widgets", "2", "4"], ["octo/widgets", "1", "2"]]


def test_usage_sql_runs_on_a_ledger_file_made_before_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    SqliteLedger(path).close()  # a ledger file, opened again by a later start: the schema is created once
    again = SqliteLedger(path)
    try:
        assert again.usage_totals(["day"]) == []
    finally:
        again.close()
