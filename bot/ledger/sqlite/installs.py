"""The ledger's installation SQL: trigger labels cached from repo configs, label chores, per-installation counts."""

from __future__ import annotations

import sqlite3
import time

from bot.jobs import InstallationChange
from bot.ledger.sql import RUNS

SCHEMA = """
CREATE TABLE IF NOT EXISTS repo_labels (repo TEXT PRIMARY KEY, label TEXT NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS label_chores (
    installation_id BIGINT NOT NULL, repo TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (installation_id, repo)
);
CREATE TABLE IF NOT EXISTS installations_gone (id BIGINT PRIMARY KEY, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_installation ON jobs (installation_id, status);
"""
"""Key of an owner's label (from its `.github` repository), used for repositories not read yet."""
Conn = sqlite3.Connection


def record(conn: Conn, change: InstallationChange) -> None:
    """Remember deleted installations, and queue a label chore for each repository it gained."""
    now = time.time()
    if change.action == "deleted":
        conn.execute(
            "INSERT OR REPLACE INTO installations_gone (id, updated_at) VALUES (?, ?)", (change.installation_id, now)
        )
        conn.execute("DELETE FROM label_chores WHERE installation_id = ?", (change.installation_id,))
        return
    conn.execute("DELETE FROM installations_gone WHERE id = ?", (change.installation_id,))
    if change.action in ("created", "added"):
        conn.executemany(
            "INSERT OR IGNORE INTO label_chores (installation_id, repo, created_at) VALUES (?, ?, ?)",
            [(change.installation_id, repo, now) for repo in change.repositories_added],
        )
    if change.repositories_removed:
        conn.executemany(
            "DELETE FROM label_chores WHERE installation_id = ? AND repo = ?",
            [(change.installation_id, repo) for repo in change.repositories_removed],
        )


def active(conn: Conn, installation_id: int) -> bool:
    """False when the installation was deleted or is suspended (unknown ones are active)."""
    gone = conn.execute("SELECT 1 FROM installations_gone WHERE id = ?", (installation_id,)).fetchone()
    suspended = conn.execute("SELECT suspended FROM installations WHERE id = ?", (installation_id,)).fetchone()
    return gone is None and not (suspended and suspended[0])


def remember_label(conn: Conn, key: str, label: str | None) -> None:
    """Cache (or forget, with None) the trigger label of a repository or of an owner (`owner/*`)."""
    if label is None:
        conn.execute("DELETE FROM repo_labels WHERE repo = ?", (key,))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO repo_labels (repo, label, updated_at) VALUES (?, ?, ?)", (key, label, time.time())
        )


def take_label_chore(conn: Conn) -> tuple[int, str] | None:
    """Remove and return the oldest label chore."""
    row = conn.execute("SELECT installation_id, repo FROM label_chores ORDER BY created_at LIMIT 1").fetchone()
    if row is None:
        return None
    conn.execute("DELETE FROM label_chores WHERE installation_id = ? AND repo = ?", (row[0], row[1]))
    return int(row[0]), str(row[1])


def count(conn: Conn, installation_id: int, status: str, *, other_than: tuple[str, int] | None = None) -> int:
    """Runs (fix, retry, follow-ups) of an installation in `status`, not counting one issue's and queue-full ones."""
    repo, issue = other_than or ("", 0)
    row = conn.execute(
        f"SELECT COUNT(*) FROM jobs WHERE installation_id = ? AND status = ? AND {RUNS} "
        "AND json_extract(extra, '$.queue_full') IS NULL AND NOT (repo = ? AND issue = ?)",
        (installation_id, status, repo, issue),
    ).fetchone()
    return int(row[0])
