"""PR-outcome events that must not count: a fork's look-alike branch, a PR no job opened, a drive-by review."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from bot.jobs import JobKind, JobRequest, JobStatus, PrEvent
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.trajectory_store import LocalTrajectories
from bot.web.pr_metrics import ClosedPrSource
from tests.unit.conftest import client, deliver, examples, job_queue, ledger, settings

__all__ = ["client", "deliver", "examples", "job_queue", "ledger", "settings"]

Examples = Callable[[str], list[dict[str, Any]]]
Deliver = Callable[..., Any]


def _payload(examples: Examples, event: str, action: str, pull: int = 9) -> dict[str, Any]:
    payload = next(p for p in examples(event) if p["action"] == action)
    payload["installation"] = {"id": 77}
    payload["pull_request"]["number"] = pull
    payload["pull_request"]["head"]["ref"] = "mini-fix/issue-1"
    payload["pull_request"]["head"]["repo"] = dict(payload["repository"])
    payload["sender"]["type"] = "User"
    return payload


def _job_with_pr(ledger: SqliteLedger, repo: str, pull: int) -> None:
    job = ledger.submit(JobRequest(JobKind.FIX, 77, repo, 1, "ada", f"d-{pull}")).job
    assert ledger.claim(job.id, "w1", 60) is not None
    ledger.finish(job.id, "w1", JobStatus.SUCCEEDED, pr_url=f"https://github.com/{repo}/pull/{pull}", run_id="r1")


def test_a_forks_pull_request_on_a_look_alike_branch_is_not_recorded(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger
) -> None:
    fork = _payload(examples, "pull_request", "closed")
    _job_with_pr(ledger, fork["repository"]["full_name"], 9)
    fork["pull_request"]["head"]["repo"] = {**fork["repository"], "full_name": "mallory/Hello-World"}
    answer = deliver(client, "pull_request", fork).json()
    assert answer["action"] == "ignore" and "fork" in answer["reason"]
    assert ledger.pr_outcomes() == {}


def test_a_pull_request_no_job_opened_is_not_recorded(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger
) -> None:
    closed = _payload(examples, "pull_request", "closed", pull=12)
    _job_with_pr(ledger, closed["repository"]["full_name"], 112)  # /pull/112 is not /pull/12
    deliver(client, "pull_request", closed)
    assert ledger.pr_outcomes() == {}


def test_a_review_by_someone_outside_the_repository_is_not_counted(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger
) -> None:
    repo = _payload(examples, "pull_request", "closed")["repository"]["full_name"]
    _job_with_pr(ledger, repo, 9)
    for association in ("NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "COLLABORATOR"):
        review = _payload(examples, "pull_request_review", "submitted")
        review["review"] |= {"state": "approved", "author_association": association}
        deliver(client, "pull_request_review", review)
    assert ledger.pr_outcomes()[(repo, 9)]["reviews"]["approved"] == 1  # the collaborator's only


def test_closed_pr_metrics_count_only_rows_joined_to_a_job(ledger: SqliteLedger, tmp_path: Path) -> None:
    _job_with_pr(ledger, "octo/widgets", 9)

    ledger.record_pr_event(PrEvent(77, "octo/widgets", 9, "closed", "ada", merged=True))
    stray = (
        "INSERT INTO pr_outcomes (repo, pull, state, merged, updated_at) VALUES ('octo/widgets', 50, 'closed', 1, 0)"
    )
    ledger._writer.submit(lambda conn: conn.execute(stray)).result()  # a row written before this check existed
    assert set(ledger.pr_outcomes()) == {("octo/widgets", 9), ("octo/widgets", 50)}
    closed = list(ClosedPrSource(ledger, LocalTrajectories(tmp_path))())
    assert [(repo, merged) for repo, _model, merged, _ in closed] == [("octo/widgets", True)]
