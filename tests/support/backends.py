"""The two storage backends the ledger/queue suite runs on: a SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bot.settings import Settings
from tests.support.postgres import fresh_schema

BACKENDS = ("sqlite", "postgres")
SECRET = "test-webhook-secret-1f2e3d"


@contextmanager
def backend_settings(backend: str, data_dir: Path, **overrides: object) -> Iterator[Settings]:
    """Settings whose database_url names a fresh database of `backend`."""
    with _database_url(backend, data_dir) as url:
        values: dict[str, object] = {"webhook_secret": SECRET, "workers": 2, "lease_seconds": 60, **overrides}
        yield Settings(data_dir=data_dir, database_url=url, _env_file=None, **values)  # type: ignore[arg-type]


@contextmanager
def _database_url(backend: str, data_dir: Path) -> Iterator[str]:
    if backend == "postgres":
        with fresh_schema() as url:
            yield url
    else:
        yield f"sqlite:///{data_dir / 'mini-fix.db'}"
