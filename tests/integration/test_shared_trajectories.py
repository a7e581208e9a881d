"""With a postgresql:// URL a worker's trajectory is stored, compressed, in the database; any replica serves it."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from bot.ledger import open_ledger
from bot.signing import run_query
from bot.trajectory import RunStats, TrajectoryWriter
from bot.trajectory_store import LocalTrajectories, open_trajectories, shared_saver
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
