"""huey's PostgreSQL storage for the dispatch queue, with its tables created once across processes."""

from __future__ import annotations

import psycopg
from huey import PostgresHuey

from bot.ledger.postgres.ops import SCHEMA_LOCK

READ_TIMEOUT = 0.5  # seconds a worker slot blocks on LISTEN before looking at its stop flag


def postgres_huey(url: str) -> PostgresHuey:
    """A PostgresHuey on `url`; concurrent starts do not race on CREATE TABLE."""
    huey = PostgresHuey("mini-fix", dsn=url, results=False, create_tables=False, read_timeout=READ_TIMEOUT)
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        for statement in huey.storage.ddl:
            conn.execute(statement)
    return huey
