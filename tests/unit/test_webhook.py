"""The webhook route through HTTP: real signed payloads, real SQLite ledger and huey queue in tmp."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from bot.jobs import JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings, SettingsError
from bot.web.app import create_app

Examples = Callable[[str], list[dict[str, Any]]]
Deliver = Callable[..., Any]
EXPECTED = {
    "ping": (200, "pong"),
    "issues": (202, "ignore"),
    "issue_comment": (202, "ignore"),
    "pull_request": (202, "ignore"),
    "installation": (202, "installation"),
    "installation_repositories": (202, "installation"),
}


@pytest.fixture
def labeled(examples: Examples) -> Callable[..., dict[str, Any]]:
    def make(issue: int = 1, label: str = "mini-fix") -> dict[str, Any]:
        payload = copy.deepcopy(next(p for p in examples("issues") if p["action"] == "labeled"))
        payload["installation"] = {"id": 77}
        payload["label"]["name"] = label
        payload["issue"]["number"] = issue
        return payload

    return make


@pytest.mark.parametrize("path", ["/webhook", "/api/github/webhooks"])
@pytest.mark.parametrize("event", sorted(EXPECTED))
def test_every_example_is_answered(
    event: str, path: str, client: TestClient, examples: Examples, deliver: Deliver, ledger: SqliteLedger
) -> None:
    status, action = EXPECTED[event]
    for payload in examples(event):
        response = deliver(client, event, payload, path=path)
        assert response.status_code == status, response.text
        assert response.json()["action"] == action
    assert ledger.list() == []


def test_trigger_label_records_a_job_and_queues_it(
    client: TestClient, deliver: Deliver, labeled: Any, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    response = deliver(client, "issues", labeled(issue=5))
    assert response.status_code == 202
    body = response.json()
    assert body["action"] == "enqueue" and body["created"] is True
    job = ledger.get(body["job_id"])
    assert job is not None and job.status == JobStatus.QUEUED and job.issue == 5
    deadline = time.monotonic() + 10
    while job.id not in job_queue.pending_ids() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert job_queue.pending_ids() == {job.id}


def test_redelivery_records_one_job(client: TestClient, deliver: Deliver, labeled: Any, ledger: SqliteLedger) -> None:
    first = deliver(client, "issues", labeled(), delivery="same-delivery").json()
    second = deliver(client, "issues", labeled(), delivery="same-delivery").json()
    assert first["job_id"] == second["job_id"] and second["created"] is False
    assert len(ledger.list()) == 1


def test_another_label_or_a_bot_records_nothing(
    client: TestClient, deliver: Deliver, labeled: Any, ledger: SqliteLedger
) -> None:
    assert deliver(client, "issues", labeled(label="bug")).json()["action"] == "ignore"
    from_bot = labeled()
    from_bot["sender"]["type"] = "Bot"
    assert deliver(client, "issues", from_bot).json()["action"] == "ignore"
    assert ledger.list() == []


def test_a_new_trigger_waits_for_the_active_run_and_unlabel_cancels_both(
    client: TestClient, deliver: Deliver, labeled: Any, ledger: SqliteLedger
) -> None:
    first = deliver(client, "issues", labeled(issue=9)).json()
    second = deliver(client, "issues", labeled(issue=9)).json()
    assert first["waiting"] is False and second["waiting"] is True and second["created"] is True
    assert ledger.get(first["job_id"]).status == JobStatus.QUEUED  # type: ignore[union-attr]  # nothing cancelled
    unlabeled = labeled(issue=9)
    unlabeled["action"] = "unlabeled"
    cancelled = deliver(client, "issues", unlabeled).json()["cancelled"]
    assert sorted(cancelled) == sorted([first["job_id"], second["job_id"]])
    assert [j.status for j in ledger.list()] == [JobStatus.CANCELLED, JobStatus.CANCELLED]


def test_installation_deleted_cancels_its_jobs(
    client: TestClient, deliver: Deliver, labeled: Any, examples: Examples, ledger: SqliteLedger
) -> None:
    job_id = deliver(client, "issues", labeled(issue=3)).json()["job_id"]
    deleted = copy.deepcopy(next(p for p in examples("installation") if p["action"] == "deleted"))
    deleted["installation"]["id"] = 77
    assert deliver(client, "installation", deleted).json()["cancelled"] == [job_id]
    assert ledger.installation(77) is None


def post(client: TestClient, body: bytes, headers: dict[str, str]) -> Any:
    return client.post("/webhook", content=body, headers={"X-GitHub-Event": "issues", **headers})


def test_missing_or_wrong_signature_is_401(client: TestClient) -> None:
    body = b'{"action": "labeled"}'
    missing = post(client, body, {"X-GitHub-Delivery": "d"})
    assert missing.status_code == 401 and "MINIFIX_WEBHOOK_SECRET" in missing.json()["hint"]
    wrong = post(client, body, {"X-GitHub-Delivery": "d", "X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert wrong.status_code == 401
    sha1 = post(client, body, {"X-GitHub-Delivery": "d", "X-Hub-Signature-256": "sha1=abc"})
    assert sha1.status_code == 401


def test_malformed_deliveries_are_400(client: TestClient, sign: Callable[[bytes], str]) -> None:
    for body in (b"{not json", b"[1, 2]", b"\xff\xfe"):
        response = post(client, body, {"X-GitHub-Delivery": "d", "X-Hub-Signature-256": sign(body)})
        assert response.status_code == 400, body
    body = b"{}"
    no_delivery = post(client, body, {"X-Hub-Signature-256": sign(body)})
    assert no_delivery.status_code == 400 and "X-GitHub-Delivery" in no_delivery.json()["error"]


def test_unexpected_field_types_are_not_a_server_error(client: TestClient, deliver: Deliver, labeled: Any) -> None:
    for mangle in ({"installation": "77"}, {"repository": None}, {"sender": []}, {"label": 5}, {"action": 1}):
        response = deliver(client, "issues", {**labeled(), **mangle})
        assert response.status_code == 202 and response.json()["action"] == "ignore", mangle


def test_oversized_payload_is_413(client: TestClient) -> None:
    headers = {"X-GitHub-Delivery": "d", "Content-Length": str(26 * 1024 * 1024)}
    assert post(client, b"{}", headers).status_code == 413


def test_healthz_and_metrics(client: TestClient, deliver: Deliver, labeled: Any) -> None:
    deliver(client, "issues", labeled())
    assert client.get("/healthz").json()["ok"] is True
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert 'minifix_webhook_deliveries_total{event="issues",forge="github",outcome="enqueue"}' in metrics.text


@pytest.mark.parametrize("secret", ["", "changeme"])
def test_refuses_to_start_without_a_real_secret(secret: str, tmp_path: Any) -> None:
    settings = Settings(webhook_secret=secret, data_dir=tmp_path, _env_file=None)
    with pytest.raises(SettingsError, match="MINIFIX_WEBHOOK_SECRET"):
        create_app(settings)


def test_json_is_read_from_the_raw_body(client: TestClient, deliver: Deliver, labeled: Any, sign: Any) -> None:
    body = json.dumps(labeled(issue=12), indent=4).encode()  # GitHub's bytes, not a re-serialised dict
    headers = {"X-GitHub-Delivery": "raw", "X-Hub-Signature-256": sign(body)}
    assert post(client, body, headers).json()["action"] == "enqueue"
