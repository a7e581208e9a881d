"""Fixtures for the webhook path, the ledger and the worker: real SQLite files in tmp, real signatures."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue, build_queue
from bot.settings import Settings
from bot.web.app import create_app
from tests.support.webhooks import body_for

FIXTURES = Path(__file__).parent.parent / "fixtures" / "webhooks"
SECRET = "test-webhook-secret-1f2e3d"


def _examples(event: str) -> list[dict[str, Any]]:
    payloads: list[dict[str, Any]] = json.loads((FIXTURES / f"{event}.json").read_text())
    return payloads


@pytest.fixture
def examples() -> Callable[[str], list[dict[str, Any]]]:
    """The vendored @octokit/webhooks-examples payloads of one event (fresh copies)."""
    return _examples


def _sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture
def sign() -> Callable[[bytes], str]:
    """GitHub's X-Hub-Signature-256 value for a body."""
    return _sign


def _deliver(
    client: TestClient,
    event: str,
    payload: dict[str, Any],
    *,
    delivery: str | None = None,
    path: str = "/webhook",
) -> Any:
    delivery = delivery or str(uuid.uuid4())
    body = body_for(payload, delivery)
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": _sign(body),
        "Content-Type": "application/json",
    }
    return client.post(path, content=body, headers=headers)


@pytest.fixture
def deliver() -> Callable[..., Any]:
    """POST a payload the way GitHub does: raw JSON, signed, with the event and delivery headers."""
    return _deliver


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        webhook_secret=SECRET,
        data_dir=tmp_path,
        label="mini-fix",
        workers=2,
        lease_seconds=60,
        webhook_cache_seconds=0,  # these tests change the ledger behind the route's back, as a worker would
        _env_file=None,
    )


@pytest.fixture
def ledger(settings: Settings) -> Iterator[SqliteLedger]:
    led = SqliteLedger(settings.data_dir / "mini-fix.db")
    yield led
    led.close()


@pytest.fixture
def job_queue(settings: Settings) -> Iterator[JobQueue]:
    q = build_queue(settings)
    yield q
    q.close()


@pytest.fixture
def client(settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> Iterator[TestClient]:
    with TestClient(create_app(settings, ledger=ledger, queue=job_queue)) as test_client:
        yield test_client
