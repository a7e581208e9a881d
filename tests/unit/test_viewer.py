"""The trajectory viewer through HTTP: signed links, the operator token, strict run ids, escaping."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.pipeline.report import run_link
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.signing import run_query, run_signature, signed_run_url, valid_run_id
from bot.web.app import create_app
from tests.support.trajectories import write_run

TOKEN = "operator-token-7c1d"
EVIL = "<script>alert('x')</script>"


@pytest.fixture
def viewer_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"operator_token": SecretStr(TOKEN), "public_url": "https://fix.example.com/"})


@pytest.fixture
def viewer(viewer_settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> Iterator[TestClient]:
    job = ledger.submit(JobRequest(JobKind.FIX, 7, "acme/widgets", 3, "alice", "d-1")).job
    ledger.claim(job.id, "w1", 60)
    ledger.finish(job.id, "w1", JobStatus.SUCCEEDED, pr_url="https://github.com/acme/widgets/pull/4", run_id="run1")
    write_run(viewer_settings.data_dir, "run1", [("ls", "calc.py\n", 0), ("python -m pytest", EVIL, 1)], job_id=job.id)
    with TestClient(create_app(viewer_settings, ledger=ledger, queue=job_queue)) as client:
        yield client


def signed(settings: Settings, run_id: str, page: str = "") -> str:
    url = signed_run_url(settings, run_id, page)
    assert url is not None
    return url.removeprefix("https://fix.example.com")


def test_a_signed_link_shows_every_step_escaped(viewer: TestClient, viewer_settings: Settings) -> None:
    page = viewer.get(signed(viewer_settings, "run1"))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert 'id="step-1"' in html and 'id="step-2"' in html and "python -m pytest" in html
    assert EVIL not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert "https://github.com/acme/widgets/pull/4" in html and "https://github.com/acme/widgets/issues/3" in html
    assert "exit 1" in html and "script-src" not in page.headers["content-security-policy"]


@pytest.mark.parametrize("query", ["", "?sig=", "?sig=00000000000000000000000000000000", "?token=wrong"])
def test_unsigned_or_forged_links_are_refused(viewer: TestClient, query: str) -> None:
    assert viewer.get(f"/runs/run1{query}").status_code == 403
    assert viewer.get(f"/runs/run1/trajectory.json{query}").status_code == 403


def test_a_signature_is_for_one_run_only(viewer: TestClient, viewer_settings: Settings) -> None:
    write_run(viewer_settings.data_dir, "run2", [("ls", "", 0)])
    assert viewer.get(f"/runs/run2?{run_query(viewer_settings, 'run1')}").status_code == 403


def test_the_operator_token_opens_any_run(viewer: TestClient) -> None:
    assert viewer.get("/runs/run1", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    reply = viewer.get("/runs/run1/trajectory.json", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.json()["mini_fix"]["run_id"] == "run1"
    # Never in the URL, where proxies, browser history and Referer headers keep it.
    assert viewer.get(f"/runs/run1/trajectory.json?token={TOKEN}").status_code == 403


def test_the_json_is_the_trajectory_file(viewer: TestClient, viewer_settings: Settings) -> None:
    reply = viewer.get(signed(viewer_settings, "run1", "trajectory.json"))
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    data = reply.json()
    assert data["trajectory_format"].startswith("mini-swe-agent") and data["info"]["exit_status"] == "Submitted"


@pytest.mark.parametrize(
    "path", ["/runs/..%2F..%2Fetc%2Fpasswd", "/runs/%2E%2E/trajectory.json", "/runs/.hidden", "/runs/a.b", "/runs/nope"]
)
def test_bad_or_unknown_run_ids_are_404(viewer: TestClient, path: str) -> None:
    assert viewer.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404


@pytest.mark.parametrize("run_id", ["..", "../x", "a/b", "", "x" * 65, "-lead", "a\x00b", "ok_run-1"])
def test_run_ids_are_validated_strictly(run_id: str) -> None:
    assert valid_run_id(run_id) == (run_id == "ok_run-1")


def test_the_run_list_needs_the_operator_token(viewer: TestClient) -> None:
    assert viewer.get("/runs").status_code == 401
    assert viewer.get("/runs?token=nope").status_code == 401
    listing = viewer.get("/runs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert listing.status_code == 200
    html = listing.text
    assert "run1" in html and "acme/widgets" in html and "succeeded" in html and "1,280" in html and "42s" in html
    assert "/runs/run1?exp=" in html and "&amp;sig=" in html and "https://github.com/acme/widgets/pull/4" in html


def test_the_run_list_is_off_without_an_operator_token(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    with TestClient(create_app(settings, ledger=ledger, queue=job_queue)) as client:
        assert client.get("/runs", headers={"Authorization": "Bearer anything"}).status_code == 404


def test_links_posted_on_github_are_signed(viewer_settings: Settings, settings: Settings) -> None:
    link = run_link(viewer_settings, "run1")
    assert link is not None and link.startswith("https://fix.example.com/runs/run1?exp=")
    assert run_link(settings, "run1") is None  # no public URL: no link
    other = viewer_settings.model_copy(update={"webhook_secret": SecretStr("another-secret-value")})
    assert run_signature(other, "run1", 10) != run_signature(viewer_settings, "run1", 10)


@pytest.mark.parametrize("query", ["?sig=%C3%A9&exp=1", "?sig=%FF&exp=%C3%A9", "?exp=99999999999999999999&sig=x"])
def test_a_malformed_signature_is_a_403_not_a_500(viewer: TestClient, query: str) -> None:
    assert viewer.get(f"/runs/run1{query}").status_code == 403


def test_an_expired_link_is_refused(viewer: TestClient, viewer_settings: Settings) -> None:
    old = run_query(viewer_settings, "run1", now=0)  # expired 30 days after 1970
    assert viewer.get(f"/runs/run1?{old}").status_code == 403


def _v0_query(settings: Settings, run_id: str) -> str:
    """A link as the first release signed it: the run id alone, no expiry (`?sig=`)."""
    return f"sig={run_signature(settings, run_id, 0, version='0')}"


def _v1_query(settings: Settings, run_id: str, expires: int) -> str:
    """A link as the release before versions signed it: run id and expiry, no `v`."""
    return f"exp={expires}&sig={run_signature(settings, run_id, expires, version='1')}"


def test_links_signed_by_every_earlier_version_still_open(viewer: TestClient, viewer_settings: Settings) -> None:
    later = int(time.time()) + 86_400
    assert viewer.get(f"/runs/run1?{_v0_query(viewer_settings, 'run1')}").status_code == 200  # the run is new
    assert viewer.get(f"/runs/run1/trajectory.json?{_v1_query(viewer_settings, 'run1', later)}").status_code == 200
    assert viewer.get(f"/runs/run1?{run_query(viewer_settings, 'run1')}").status_code == 200
    assert run_query(viewer_settings, "run1").endswith("&v=2")


def test_an_old_version_is_not_a_way_around_expiry_or_binding(viewer: TestClient, viewer_settings: Settings) -> None:
    expired = int(time.time()) - 10
    assert viewer.get(f"/runs/run1?{_v1_query(viewer_settings, 'run1', expired)}").status_code == 403
    later = int(time.time()) + 86_400
    as_v2 = f"{_v1_query(viewer_settings, 'run1', later)}&v=2"  # a v1 signature presented as v2
    assert viewer.get(f"/runs/run1?{as_v2}").status_code == 403
    assert viewer.get(f"/runs/run1?{_v0_query(viewer_settings, 'run1')}&exp={later}").status_code == 403
    assert viewer.get(f"/runs/run1?{run_query(viewer_settings, 'run1')[:-1]}9").status_code == 403  # unknown v
    write_run(viewer_settings.data_dir, "run2", [("ls", "", 0)])
    assert viewer.get(f"/runs/run2?{_v0_query(viewer_settings, 'run1')}").status_code == 403


def test_a_v0_link_expires_run_link_days_after_its_run_started(viewer: TestClient, viewer_settings: Settings) -> None:
    path = viewer_settings.data_dir / "runs" / "run1" / "trajectory.json"
    data = json.loads(path.read_text())
    started = datetime.now(UTC) - timedelta(days=viewer_settings.run_link_days, hours=1)
    data["mini_fix"]["started_at"] = started.isoformat(timespec="seconds")
    path.write_text(json.dumps(data))
    assert viewer.get(f"/runs/run1?{_v0_query(viewer_settings, 'run1')}").status_code == 403
    assert viewer.get(f"/runs/run1?{run_query(viewer_settings, 'run1')}").status_code == 200
