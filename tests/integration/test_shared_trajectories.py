"""With a postgresql:// URL a worker's trajectory is stored, compressed, in the database; any replica serves it."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from bot.cli.main import _parser
from bot.eval.export_command import run_export
from bot.jobs import Job, JobKind, JobStatus
from bot.ledger import open_ledger
from bot.signing import run_query
from bot.trajectory import RunStats, TrajectoryWriter
from bot.trajectory_store import LocalTrajectories, open_trajectories, shared_saver
from bot.web.pr_metrics import ClosedPrSource
from bot.web.viewer import register_viewer
from tests.support.backends import backend_settings

pytestmark = pytest.mark.postgres
MESSAGES = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "add() subtracts " * 200}]


def test_a_run_written_on_one_host_opens_from_another(tmp_path: Path) -> None:
    with backend_settings("postgres", tmp_path / "worker") as worker_side:
        writer = TrajectoryWriter(
            worker_side.data_dir / "runs" / "run-1" / "trajectory.json",
            mini_fix={"repo": "acme/calc", "issue": 1, "run_id": "run-1", "job_id": "job-1"},
            mirror=lambda text: shared_saver(worker_side)("run-1", text),  # type: ignore[misc]
        )
        writer.save(MESSAGES, config={}, stats=RunStats(api_calls=1))
        api_side = worker_side.model_copy(update={"data_dir": tmp_path / "api"})  # another replica, no files
        app = FastAPI()
        register_viewer(app, api_side, open_ledger(api_side))
        query = run_query(api_side, "run-1")
        with TestClient(app) as client:
            page = client.get(f"/runs/run-1?{query}")
            raw = client.get(f"/runs/run-1/trajectory.json?{query}")
            unsigned = client.get("/runs/run-1/trajectory.json")
        with psycopg.connect(worker_side.database_url or "") as conn:
            stored = bytes(conn.execute("SELECT data FROM trajectories WHERE run_id = 'run-1'").fetchone()[0])  # type: ignore[index]
        assert not (tmp_path / "api" / "runs").exists()
        assert page.status_code == 200 and "add() subtracts" in page.text and "acme/calc" in page.text
        assert raw.status_code == 200 and raw.json()["messages"] == MESSAGES and unsigned.status_code == 403
        text = zlib.decompress(stored).decode()
        assert json.loads(text)["messages"] == MESSAGES and len(stored) < len(text) / 5


def test_one_host_reads_the_data_dir(tmp_path: Path) -> None:
    with backend_settings("sqlite", tmp_path) as settings:
        store = open_trajectories(settings)
        (tmp_path / "runs" / "run-2").mkdir(parents=True)
        (tmp_path / "runs" / "run-2" / "trajectory.json").write_text('{"messages": []}')
        assert isinstance(store, LocalTrajectories) and shared_saver(settings) is None
        assert store.load("run-2") == '{"messages": []}' and store.recent(10) == ["run-2"]
        assert store.load("run-3") is None


FINISHED = [*MESSAGES, {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}}]


def test_export_and_pr_metrics_on_another_host_read_the_database(tmp_path: Path) -> None:
    with backend_settings("postgres", tmp_path / "worker") as worker_side:
        saver = shared_saver(worker_side)
        assert saver is not None
        for run_id in ("run-a", "run-b"):
            writer = TrajectoryWriter(
                worker_side.data_dir / "runs" / run_id / "trajectory.json",
                mini_fix={"repo": "acme/calc", "issue": 1, "run_id": run_id, "model": "hosted_vllm/qwen"},
                mirror=lambda text, run_id=run_id: saver(run_id, text),
            )
            writer.save(FINISHED if run_id == "run-a" else MESSAGES, config={}, stats=RunStats(api_calls=1))
        api_side = worker_side.model_copy(update={"data_dir": tmp_path / "api"})  # another host: no files
        out = tmp_path / "export.jsonl"
        assert run_export(_parser().parse_args(["export", "--output", str(out)]), api_side) == 0
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        # run-b has no exit message yet (still running): only the finished run is an example
        assert [line["metadata"]["run_id"] for line in lines] == ["run-a"]
        store = open_trajectories(api_side)
        ledger = _OnePr("run-a")
        assert list(ClosedPrSource(ledger, store)()) == [("acme/calc", "hosted_vllm/qwen", True, False)]  # type: ignore[arg-type]


class _OnePr:
    """The two ledger reads ClosedPrSource makes: one merged PR opened by `run_id`."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def pr_outcomes(self) -> dict[tuple[str, int], dict[str, object]]:
        return {("acme/calc", 5): {"state": "merged", "merged": True, "human_pushes": 0}}

    def list(self, limit: int) -> list[Job]:
        return [Job("j", JobKind.FIX, 1, "acme/calc", 1, "ada", "d", JobStatus.SUCCEEDED,
                    pr_url="https://github.com/acme/calc/pull/5", run_id=self.run_id)]  # fmt: skip
