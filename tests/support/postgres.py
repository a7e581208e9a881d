"""A real PostgreSQL for tests: MINIFIX_TEST_POSTGRES_URL (scripts/ensure-postgres.sh), one fresh schema per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest

SETUP_HINT = 'export MINIFIX_TEST_POSTGRES_URL="$(scripts/ensure-postgres.sh | tail -n1)" (as root)'


def server_url() -> str:
    """The test server's URL; fails under CI when it is unset, skips otherwise."""
    url = os.environ.get("MINIFIX_TEST_POSTGRES_URL", "")
    if url:
        return url
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(f"MINIFIX_TEST_POSTGRES_URL is unset under CI: {SETUP_HINT}", pytrace=False)
    pytest.skip(f"no PostgreSQL for this run: {SETUP_HINT}")


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A URL whose search_path is a new empty schema, dropped afterwards: tests never see each other's rows."""
    import psycopg

    base = server_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in base else "?"
    try:
        yield f"{base}{joiner}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
