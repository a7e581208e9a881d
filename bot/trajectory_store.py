"""Where the viewer reads trajectories: the data dir's files (one host), or PostgreSQL so every replica can.

Workers always write `runs/<id>/trajectory.json` in their own data dir (mini-swe-agent's tools read it there);
with a postgresql:// database URL each save is also stored, zlib-compressed, in the ledger's database, and the
viewer of any API replica reads it from there.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from bot.settings import Settings
from bot.signing import valid_run_id

SCHEMA = """CREATE TABLE IF NOT EXISTS trajectories (
    run_id TEXT PRIMARY KEY, data BYTEA NOT NULL, updated_at DOUBLE PRECISION NOT NULL)"""
UPSERT = (
    "INSERT INTO trajectories (run_id, data, updated_at) VALUES (%s, %s, %s) "
    "ON CONFLICT (run_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at"
)


class TrajectoryStore(Protocol):
    """Trajectory texts (JSON) by run id."""

    def load(self, run_id: str) -> str | None:
        """The run's trajectory JSON, or None when there is none."""
        ...

    def recent(self, limit: int) -> list[str]:
        """Run ids, most recently saved first."""
        ...


class LocalTrajectories:
    """The files of one data dir (`runs/<id>/trajectory.json`)."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir

    def load(self, run_id: str) -> str | None:
        """The file's text, or None."""
        try:
            return (self.runs_dir / run_id / "trajectory.json").read_text(encoding="utf-8")
        except OSError:
            return None

    def recent(self, limit: int) -> list[str]:
        """Run ids by file modification time, newest first."""
        if not self.runs_dir.is_dir():
            return []
        found = [p for p in self.runs_dir.glob("*/trajectory.json") if valid_run_id(p.parent.name)]
        return [p.parent.name for p in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)[:limit]]


class PostgresTrajectories:
    """Compressed trajectories in the ledger's PostgreSQL database; one connection, reopened when it breaks."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._conn: Any = None
        with self._connection() as conn, conn.transaction():
            from bot.ledger.postgres.ops import SCHEMA_LOCK

            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            conn.execute(SCHEMA)

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        import psycopg

        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            try:
                yield self._conn
            except psycopg.OperationalError:
                self._conn.close()  # a restarted server: the next call connects again
                self._conn = None
                raise

    def save(self, run_id: str, text: str) -> None:
        """Store (or replace) the run's trajectory."""
        data = zlib.compress(text.encode("utf-8"), 6)
        with self._connection() as conn:
            conn.execute(UPSERT, (run_id, data, time.time()))

    def load(self, run_id: str) -> str | None:
        """The stored JSON, or None."""
        with self._connection() as conn:
            row = conn.execute("SELECT data FROM trajectories WHERE run_id = %s", (run_id,)).fetchone()
        return None if row is None else zlib.decompress(bytes(row[0])).decode("utf-8")

    def recent(self, limit: int) -> list[str]:
        """Run ids by save time, newest first."""
        with self._connection() as conn:
            rows = conn.execute("SELECT run_id FROM trajectories ORDER BY updated_at DESC LIMIT %s", (limit,))
            return [str(r[0]) for r in rows.fetchall()]


def open_trajectories(settings: Settings) -> TrajectoryStore:
    """The store the viewer reads: PostgreSQL with a postgresql:// URL, else the data dir's files."""
    if settings.uses_postgres:
        return PostgresTrajectories(settings.database_url or "")
    return LocalTrajectories(settings.data_dir / "runs")


def shared_saver(settings: Settings) -> Callable[[str, str], None] | None:
    """What a worker calls after each local save so every replica can read the run; None on one host."""
    return PostgresTrajectories(settings.database_url or "").save if settings.uses_postgres else None
