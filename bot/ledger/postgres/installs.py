"""The installation-side SQL on PostgreSQL: cached trigger labels, label chores, per-installation job counts."""

from __future__ import annotations

import time
from typing import Any

import psycopg

from bot.jobs import InstallationChange
from bot.ledger.sql import RUNS

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS repo_labels (repo TEXT PRIMARY KEY, label TEXT NOT NULL, "
    "updated_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS label_chores (installation_id BIGINT NOT NULL, repo TEXT NOT NULL, "
    "created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (installation_id, repo))",
    "CREATE TABLE IF NOT EXISTS installations_gone (id BIGINT PRIMARY KEY, updated_at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS jobs_installation ON jobs (installation_id, status)",
)
Conn = psycopg.Connection[Any]


def record(conn: Conn, change: InstallationChange) -> None:
    """Remember deleted installations, and queue a label chore for each repository it gained."""
    now, inst = time.time(), change.installation_id
    if change.action == "deleted":
        conn.execute(
            "INSERT INTO installations_gone (id, updated_at) VALUES (%s, %s) "
            "ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at",
            (inst, now),
        )
        conn.execute("DELETE FROM label_chores WHERE installation_id = %s", (inst,))
        return
    conn.execute("DELETE FROM installations_gone WHERE id = %s", (inst,))
    with conn.cursor() as cur:
        if change.action in ("created", "added"):
            cur.executemany(
                "INSERT INTO label_chores (installation_id, repo, created_at) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [(inst, repo, now) for repo in change.repositories_added],
            )
        cur.executemany(
            "DELETE FROM label_chores WHERE installation_id = %s AND repo = %s",
            [(inst, repo) for repo in change.repositories_removed],
        )


def active(conn: Conn, installation_id: int) -> bool:
    """False when the installation was deleted or is suspended (unknown ones are active)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM installations_gone WHERE id = %s) "
        "OR EXISTS (SELECT 1 FROM installations WHERE id = %s AND suspended <> 0)",
        (installation_id, installation_id),
    ).fetchone()
    return not (row and row[0])


def remember_label(conn: Conn, key: str, label: str | None) -> None:
    """Cache (or forget, with None) the trigger label of a repository or of an owner (`owner/*`)."""
    if label is None:
        conn.execute("DELETE FROM repo_labels WHERE repo = %s", (key,))
        return
    conn.execute(
        "INSERT INTO repo_labels (repo, label, updated_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (repo) DO UPDATE SET label = excluded.label, updated_at = excluded.updated_at",
        (key, label, time.time()),
    )


def take_label_chore(conn: Conn) -> tuple[int, str] | None:
    """Remove and return the oldest label chore; workers on other hosts skip the one being taken."""
    row = conn.execute(
        "DELETE FROM label_chores WHERE (installation_id, repo) = (SELECT installation_id, repo FROM label_chores "
        "ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING installation_id, repo"
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def count(conn: Conn, installation_id: int, status: str, *, other_than: tuple[str, int] | None = None) -> int:
    """Runs (fix, retry, follow-ups) of an installation in `status`, not counting one issue's and queue-full ones."""
    repo, issue = other_than or ("", 0)
    row = conn.execute(
        f"SELECT COUNT(*) FROM jobs WHERE installation_id = %s AND status = %s AND {RUNS} "
        "AND (extra::jsonb -> 'queue_full') IS NULL AND NOT (repo = %s AND issue = %s)",
        (installation_id, status, repo, issue),
    ).fetchone()
    return int(row[0]) if row else 0
