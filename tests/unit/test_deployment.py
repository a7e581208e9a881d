"""The deployment's name on a shared sandbox engine, and the sweeper's view of the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.jobs import Job
from bot.settings import Settings
from bot.worker.wiring import job_running


def test_the_deployment_name_is_the_setting_else_the_app_and_its_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = Settings(app_id=5, data_dir=tmp_path / "a", _env_file=None)
    b = Settings(app_id=5, data_dir=tmp_path / "b", _env_file=None)
    assert a.deployment_name.startswith("app5-") and a.deployment_name != b.deployment_name
    assert a.deployment_name == Settings(app_id=5, data_dir=tmp_path / "a", _env_file=None).deployment_name
    monkeypatch.setenv("MINIFIX_DEPLOYMENT", "staging")
    assert Settings(app_id=5, data_dir=tmp_path / "a", _env_file=None).deployment_name == "staging"


class BrokenLedger:
    def get(self, job_id: str) -> Job | None:
        raise OSError("database is locked")


def test_a_ledger_that_cannot_answer_keeps_the_sandbox() -> None:
    assert job_running(BrokenLedger(), "job1")  # type: ignore[arg-type]
