"""Every defect a sender can put in a delivery is a 4xx, never a 500/503; a replayed body makes no new job."""

from __future__ import annotations

import json
import uuid

import pytest
from fastapi.testclient import TestClient

from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.web.app import create_app
from tests.security.webhook_client import _deliver, _sign, client, job_queue, ledger, settings
from tests.support.webhooks import labeled

__all__ = ["client", "job_queue", "ledger", "settings"]


def _post(client: TestClient, body: bytes, **headers: str) -> int:
    sent = {"X-GitHub-Event": "issues", "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": _sign(body)}
    return client.post("/webhook", content=body, headers={**sent, **headers}).status_code


@pytest.mark.parametrize("signature", ["sha256=é" + "0" * 63, "sha256=\u00ff\u00fe", "é", "sha256=" + "z" * 64])
def test_a_malformed_signature_header_is_a_401(client: TestClient, signature: str) -> None:
    body = json.dumps(labeled("acme/widgets", 1, sender="alice")).encode()
    headers = {"X-GitHub-Event": b"issues", "X-GitHub-Delivery": b"d-1", "X-Hub-Signature-256": signature.encode()}
    reply = client.post("/webhook", content=body, headers=headers)
    assert reply.status_code == 401


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"action": "labeled", "x": "\\ud800"}',
        b'{"action": "labeled", "x": "\\udfff\\ud800"}',
        b'{"installation": {"id": 1' + b"0" * 40 + b"}}",
        b'{"installation": {"id": 99999999999999999999}}',
        b'{"x": NaN}',
        b'{"x": Infinity}',
        b"\xff\xfe{}",
        b'{"x": "\xed\xa0\x80"}',
        b"",
        b"[]",
    ],
)
def test_a_defective_signed_body_is_a_400(client: TestClient, body: bytes) -> None:
    assert _post(client, body) == 400


def test_a_lone_surrogate_in_a_real_payload_is_a_400_and_a_valid_pair_is_fine(client: TestClient) -> None:
    payload = labeled("acme/widgets", 5, sender="alice")
    payload["issue"]["title"] = "PLACEHOLDER"
    text = json.dumps(payload)
    assert _post(client, text.replace("PLACEHOLDER", "\\ud83d").encode()) == 400
    assert _post(client, text.replace("PLACEHOLDER", "\\ud83d\\ude00").encode()) == 202


def test_a_huge_installation_id_is_a_400_not_a_503(client: TestClient) -> None:
    payload = labeled("acme/widgets", 5, sender="alice", installation=1 << 70)
    assert _post(client, json.dumps(payload).encode()) == 400


def test_a_captured_body_resent_under_a_new_delivery_id_makes_no_new_job(
    client: TestClient, ledger: SqliteLedger
) -> None:
    body = json.dumps(labeled("acme/widgets", 8, sender="alice")).encode()
    first = client.post(
        "/webhook",
        content=body,
        headers={"X-GitHub-Event": "issues", "X-GitHub-Delivery": "d-a", "X-Hub-Signature-256": _sign(body)},
    ).json()
    replay = client.post(
        "/webhook",
        content=body,
        headers={"X-GitHub-Event": "issues", "X-GitHub-Delivery": "d-b", "X-Hub-Signature-256": _sign(body)},
    ).json()
    assert first["created"] is True and replay["action"] == "ignored" and "job_id" not in replay
    job = ledger.get(first["job_id"])
    assert job is not None and job.status.value == "queued"  # not cancelled or superseded by the replay
    again = client.post(
        "/webhook",
        content=body,
        headers={"X-GitHub-Event": "issues", "X-GitHub-Delivery": "d-a", "X-Hub-Signature-256": _sign(body)},
    ).json()
    assert again["job_id"] == first["job_id"] and again["created"] is False  # GitHub's redelivery: same job


def test_a_captured_body_resent_to_another_replica_makes_no_new_job(
    client: TestClient, ledger: SqliteLedger, settings: Settings, job_queue: JobQueue
) -> None:
    body = json.dumps(labeled("acme/widgets", 10, sender="alice")).encode()
    headers = {"X-GitHub-Event": "issues", "X-Hub-Signature-256": _sign(body)}
    first = client.post("/webhook", content=body, headers={**headers, "X-GitHub-Delivery": "d-a"}).json()
    other_ledger = SqliteLedger(settings.data_dir / "mini-fix.db")  # a second API replica: its own process state
    try:
        with TestClient(create_app(settings, ledger=other_ledger, queue=job_queue)) as other:
            reply = other.post("/webhook", content=body, headers={**headers, "X-GitHub-Delivery": "d-b"})
    finally:
        other_ledger.close()
    assert first["created"] is True
    assert reply.status_code == 200 and reply.json()["action"] == "ignored" and "job_id" not in reply.json()
    assert [j.id for j in ledger.list()] == [first["job_id"]] and job_queue.pending_ids() == {first["job_id"]}


def test_a_new_event_on_the_same_issue_is_still_recorded_waiting(client: TestClient) -> None:
    first = _deliver(client, "issues", labeled("acme/widgets", 9, sender="alice")).json()
    second = _deliver(client, "issues", labeled("acme/widgets", 9, sender="alice")).json()
    assert second["created"] is True and second["waiting"] is True and second["job_id"] != first["job_id"]
