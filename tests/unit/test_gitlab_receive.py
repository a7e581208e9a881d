"""POST /webhook/gitlab over HTTP: GitLab's token, its idempotency headers, 4xx for bad input, GitHub's route intact."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from structlog.testing import capture_logs

from bot.forge_ids import installation_of
from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.web.app import create_app
from tests.support.gitlab_hooks import SECRET, body, headers, issue_hook, labeled, merge_request_hook, pipeline_hook
from tests.unit.conftest import SECRET as GITHUB_SECRET

REPO = "acme/widgets"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        webhook_secret=GITHUB_SECRET,
        gitlab_url="https://gitlab.example.org",
        gitlab_webhook_secret=SECRET,
        data_dir=tmp_path,
        label="mini-fix",
        webhook_cache_seconds=0,
        _env_file=None,
    )


def post(client: TestClient, payload: dict[str, Any] | bytes, **kwargs: Any) -> Any:
    raw = payload if isinstance(payload, bytes) else body(payload)
    hdrs = kwargs.pop("hdrs", None) or headers(
        payload if isinstance(payload, dict) else {"object_kind": "issue"}, **kwargs
    )
    return client.post("/webhook/gitlab", content=raw, headers=hdrs)


def test_label_added_records_a_fix_job_at_once(client: TestClient, ledger: SqliteLedger) -> None:
    answer = post(client, labeled(REPO, 5))
    assert answer.status_code == 202 and answer.json()["action"] == "enqueue"
    job = ledger.get(answer.json()["job_id"])
    assert job is not None and (job.kind, job.repo, job.issue, job.status) == (JobKind.FIX, REPO, 5, JobStatus.QUEUED)
    assert job.installation_id < 0 and job.delivery_id.startswith("gitlab:")


@pytest.mark.parametrize("token", [None, "", "wrong", SECRET + "x", "caf\u00e9".encode()])
def test_missing_or_wrong_token_is_401_with_a_log_line(client: TestClient, ledger: SqliteLedger, token: Any) -> None:
    hdrs = headers(labeled(REPO, 5), token=None)
    if token is not None:
        hdrs["X-Gitlab-Token"] = token
    with capture_logs() as logs:
        answer = client.post("/webhook/gitlab", content=body(labeled(REPO, 5)), headers=hdrs)
    assert answer.status_code == 401 and "MINIFIX_GITLAB_WEBHOOK_SECRET" in answer.json()["hint"]
    assert any(e["event"] == "delivery rejected" and e.get("forge") == "gitlab" for e in logs)
    assert ledger.list() == []


def test_not_configured_is_a_clear_404(tmp_path: Path, ledger: SqliteLedger, job_queue: JobQueue) -> None:
    plain = Settings(webhook_secret=GITHUB_SECRET, data_dir=tmp_path, _env_file=None)
    with TestClient(create_app(plain, ledger=ledger, queue=job_queue)) as client:
        answer = post(client, labeled(REPO, 5))
    assert answer.status_code == 404 and "MINIFIX_GITLAB_WEBHOOK_SECRET" in answer.json()["hint"]
    assert ledger.list() == []


def test_redelivery_with_one_idempotency_key_records_one_job(client: TestClient, ledger: SqliteLedger) -> None:
    payload = labeled(REPO, 5)
    key = str(uuid.uuid4())
    first = post(client, payload, idempotency_key=key, event_uuid=str(uuid.uuid4()))
    # GitLab's retry keeps its Idempotency-Key; the body may differ by a field (not the same bytes).
    payload["object_attributes"]["updated_at"] = "2026-01-01 12:00:05 UTC"
    again = post(client, payload, idempotency_key=key, event_uuid=str(uuid.uuid4()))
    assert first.status_code == again.status_code == 202
    assert again.json()["job_id"] == first.json()["job_id"] and again.json()["created"] is False
    assert len(ledger.list()) == 1


def test_without_idempotency_key_one_event_uuid_per_event_name(client: TestClient, ledger: SqliteLedger) -> None:
    shared = str(uuid.uuid4())
    one = post(client, labeled(REPO, 5), event_uuid=shared)
    retried = labeled(REPO, 5)
    retried["user"]["name"] = "Alice A."  # not the same bytes: only the headers make it the same delivery
    two = post(client, retried, event_uuid=shared)
    assert one.json()["job_id"] == two.json()["job_id"] and len(ledger.list()) == 1
    # The same action's other hooks share the UUID but are other events: each is decided on its own.
    other = post(client, pipeline_hook(REPO, status="failed"), event_uuid=shared)
    assert other.status_code == 202 and other.json()["action"] == "enqueue"
    assert len(ledger.list()) == 2


def test_one_body_under_two_keys_is_a_replay(client: TestClient, ledger: SqliteLedger) -> None:
    # A project hook and a group hook for one project send the same body under two keys: one job.
    raw = body(labeled(REPO, 5))
    post(client, raw, hdrs=headers({"object_kind": "issue"}, idempotency_key="k-1"))
    answer = post(client, raw, hdrs=headers({"object_kind": "issue"}, idempotency_key="k-2"))
    assert answer.status_code == 200 and answer.json()["action"] == "ignored"
    assert len(ledger.list()) == 1


@pytest.mark.parametrize(
    "raw", [b"", b"not json", b"[1, 2]", b'{"a": NaN}', b'{"a": 1', b'{"a": "\\ud800"}', b"\xff\xfe"]
)
def test_malformed_bodies_are_400(client: TestClient, raw: bytes) -> None:
    assert post(client, raw).status_code == 400


@pytest.mark.parametrize(
    "change",
    [
        {"X-Gitlab-Event": ""},
        {"X-Gitlab-Event-UUID": ""},
        {"Idempotency-Key": "a" * 200},
        {"X-Gitlab-Event-UUID": "a\tb"},
    ],
)
def test_malformed_headers_are_400(client: TestClient, change: dict[str, str]) -> None:
    hdrs = {**headers(labeled(REPO, 5)), **change}
    assert post(client, labeled(REPO, 5), hdrs=hdrs).status_code == 400


def test_unhandled_events_are_answered_2xx(client: TestClient, ledger: SqliteLedger) -> None:
    for event in ("Push Hook", "Job Hook", "Wiki Page Hook", "System Hook"):
        answer = post(client, {"object_kind": event, "project": {"path_with_namespace": REPO}}, event=event)
        assert answer.status_code == 202 and answer.json()["action"] == "ignore"
    assert ledger.list() == []


def test_unexpected_field_types_are_not_a_server_error(client: TestClient) -> None:
    for payload in (
        {"object_kind": "issue", "object_attributes": [], "project": "x", "changes": {"labels": 3}},
        {**labeled(REPO, 5), "changes": {"labels": {"previous": "x", "current": [None, 1, {"title": 2}]}}},
        {**merge_request_hook(REPO, 3, action="update"), "changes": {"reviewers": {"current": [1, {"id": True}]}}},
    ):
        assert post(client, payload, event="Issue Hook").status_code < 500
        assert post(client, payload, event="Merge Request Hook").status_code < 500


def test_close_cancels_the_issue_run(client: TestClient, ledger: SqliteLedger) -> None:
    job_id = post(client, labeled(REPO, 5)).json()["job_id"]
    answer = post(client, issue_hook(REPO, 5, action="close", state="closed"))
    assert answer.json()["cancelled"] == [job_id]
    merged = post(client, merge_request_hook(REPO, 3, action="merge", branch="mini-fix/issue-5"))
    assert merged.status_code == 202 and merged.json()["action"] == "cancel"


def test_metrics_carry_the_forge(client: TestClient) -> None:
    post(client, labeled(REPO, 5))
    text = client.get("/metrics").text
    assert 'minifix_webhook_deliveries_total{event="Issue Hook",forge="gitlab",outcome="enqueue"}' in text


def test_githubs_route_is_unchanged_and_refuses_a_gitlab_token(client: TestClient, deliver: Any) -> None:
    gh = deliver(client, "ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert gh.status_code == 200 and gh.json() == {"action": "pong"}
    # A GitLab delivery sent to GitHub's path has no signature: refused there.
    wrong = client.post("/webhook", content=body(labeled(REPO, 5)), headers=headers(labeled(REPO, 5)))
    assert wrong.status_code == 401
    assert client.get("/webhook/gitlab").status_code == 405


def test_trigger_label_from_the_projects_config(client: TestClient, ledger: SqliteLedger) -> None:
    ledger.remember_label(REPO, "autofix", installation_id=installation_of(REPO))
    assert post(client, labeled(REPO, 5)).json()["action"] == "ignore"
    assert post(client, labeled(REPO, 6, label="autofix")).json()["action"] == "enqueue"


def test_a_github_repositorys_label_is_not_the_same_paths_gitlab_projects(
    client: TestClient, ledger: SqliteLedger
) -> None:
    ledger.remember_label(REPO, "gh-fix", installation_id=42)  # GitHub's acme/widgets, maybe another owner's
    ledger.remember_label("acme/*", "gh-org-fix", installation_id=42)
    assert post(client, labeled(REPO, 5, label="gh-fix")).json()["action"] == "ignore"
    assert post(client, labeled(REPO, 6, label="gh-org-fix")).json()["action"] == "ignore"
    assert post(client, labeled(REPO, 7)).json()["action"] == "enqueue"  # the project's own (default) label


def test_closing_a_gitlab_issue_leaves_the_same_paths_github_run_alone(
    client: TestClient, ledger: SqliteLedger
) -> None:
    github = ledger.submit(JobRequest(JobKind.FIX, 42, REPO, 5, "alice", "gh-delivery")).job
    gitlab = post(client, labeled(REPO, 5)).json()
    assert gitlab["action"] == "enqueue" and not gitlab["waiting"]  # not "already running": another repository
    answer = post(client, issue_hook(REPO, 5, action="close", state="closed"))
    assert answer.json()["cancelled"] == [gitlab["job_id"]]
    assert ledger.get(github.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
