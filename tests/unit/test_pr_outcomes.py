"""PR outcomes: real signed deliveries about mini-fix's PRs, recorded per PR; `mini-fix jobs`, /runs, metrics."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from pydantic import SecretStr

from bot.cli.jobs_report import format_table, job_row
from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger.pr_outcomes import describe
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.settings import Settings
from bot.trajectory import RunStats, TrajectoryWriter

Examples = Callable[[str], list[dict[str, Any]]]
Deliver = Callable[..., Any]


def _ours(payload: dict[str, Any], *, pull: int = 9, sender_type: str = "User") -> dict[str, Any]:
    payload = copy.deepcopy(payload)
    payload["installation"] = {"id": 77}
    payload["pull_request"]["number"] = pull
    payload["pull_request"]["head"]["ref"] = "mini-fix/issue-3"
    payload["sender"]["type"] = sender_type
    return payload


def _pr(examples: Examples, action: str, **changes: Any) -> dict[str, Any]:
    payload = _ours(next(p for p in examples("pull_request") if p["action"] == action))
    payload["pull_request"].update(changes)
    return payload


def _review(examples: Examples, state: str, review_id: int = 1) -> dict[str, Any]:
    payload = _ours(next(p for p in examples("pull_request_review") if p["action"] == "submitted"))
    payload["review"] |= {"state": state, "id": review_id}
    return payload


def _settle_as_writers(ledger: SqliteLedger) -> None:
    """What the worker's review check does for reviewers with write access (tests/security tests the check)."""
    for review in ledger.unchecked_reviews():
        ledger.settle_review(review, "write", counts=True)


def test_outcomes_are_recorded_from_real_deliveries(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger
) -> None:
    repo = _pr(examples, "closed")["repository"]["full_name"]
    _job_with_pr(ledger, repo, 3, JobKind.FIX, "run1")  # only a PR the ledger recorded for a job is counted
    synchronize = {**_pr(examples, "closed"), "action": "synchronize"}
    answers = [
        deliver(client, "pull_request", synchronize),
        deliver(client, "pull_request", {**synchronize, "sender": {"login": "mini-fix[bot]", "type": "Bot"}}),
        deliver(client, "pull_request_review", _review(examples, "CHANGES_REQUESTED", review_id=1)),
        deliver(client, "pull_request_review", _review(examples, "APPROVED", review_id=2)),
        deliver(client, "pull_request", _pr(examples, "closed", merged=True)),
    ]
    # changes requested also asks for a review follow-up (issue 24); its verdict is recorded all the same
    assert [a.json()["action"] for a in answers] == ["pr_outcome", "ignore", "enqueue", "pr_outcome", "pr_outcome"]
    assert answers[0].json()["recorded"] == "human_push"
    _settle_as_writers(ledger)
    outcome = ledger.pr_outcomes()[(repo, 9)]
    assert outcome == {
        "state": "merged",
        "merged": True,
        "human_pushes": 1,
        "reviews": {"approved": 1, "changes_requested": 1, "commented": 0},
    }
    assert describe(outcome, retries=2) == "merged after 1 human push, 1 approved, 1 changes requested, 2 retries"

    deliver(client, "pull_request", _pr(examples, "reopened"))
    deliver(client, "pull_request", _pr(examples, "closed", merged=False))
    assert ledger.pr_outcomes()[(repo, 9)]["state"] == "closed"
    assert ledger.pr_outcomes()[(repo, 9)]["human_pushes"] == 1


def test_other_branches_and_dismissed_reviews_are_not_recorded(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger
) -> None:
    theirs = _pr(examples, "closed", merged=True)
    theirs["pull_request"]["head"]["ref"] = "feature/x"
    dismissed = _ours(next(p for p in examples("pull_request_review") if p["action"] == "dismissed"))
    for event, payload in [("pull_request", theirs), ("pull_request_review", dismissed)]:
        assert deliver(client, event, payload).json()["action"] == "ignore"
    assert ledger.pr_outcomes() == {}


def _job_with_pr(ledger: SqliteLedger, repo: str, issue: int, kind: JobKind, run_id: str) -> None:
    job = ledger.submit(JobRequest(kind, 77, repo, issue, "ada", f"d-{run_id}")).job
    assert ledger.claim(job.id, "w1", 60) is not None
    ledger.finish(job.id, "w1", JobStatus.SUCCEEDED, pr_url=f"https://github.com/{repo}/pull/9", run_id=run_id)


def test_jobs_runs_and_metrics_show_the_outcome(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger, settings: Settings
) -> None:
    merged = _pr(examples, "closed", merged=True)
    repo = merged["repository"]["full_name"]
    _job_with_pr(ledger, repo, 3, JobKind.FIX, "run1")
    _job_with_pr(ledger, repo, 3, JobKind.RETRY, "run2")
    writer = TrajectoryWriter(  # as the pipeline writes it: the run's model in our block, none in the agent config
        settings.data_dir / "runs" / "run2" / "trajectory.json", mini_fix={"repo": repo, "model": "hosted_vllm/qwen"}
    )
    writer.save([], config={"model": {"model_name": None}}, stats=RunStats())
    deliver(client, "pull_request", merged)

    table = format_table(ledger.list(), ledger.pr_outcomes())
    assert "OUTCOME" in table and table.count("merged, 1 retry") == 2
    row = job_row(ledger.list()[0], ledger.pr_outcomes())
    assert row["pr_outcome"] == ledger.pr_outcomes()[(repo, 9)] and json.dumps(row)

    scraped = client.get("/metrics").text
    labels = f'model="hosted_vllm/qwen",repo="{repo}"'
    assert f"minifix_pull_requests_closed{{{labels}}} 1.0" in scraped
    assert f'minifix_pull_requests_merged{{after_human_push="false",{labels}}} 1.0' in scraped


def test_run_list_shows_the_outcome(
    settings: Settings, ledger: SqliteLedger, examples: Examples, deliver: Deliver
) -> None:
    from bot.queue.dispatch import build_queue
    from bot.web.app import create_app

    token = "op-token"
    settings = settings.model_copy(update={"operator_token": SecretStr(token)})
    merged = _pr(examples, "closed", merged=True)
    repo = merged["repository"]["full_name"]
    _job_with_pr(ledger, repo, 3, JobKind.FIX, "run1")
    job = ledger.list()[0]
    writer = TrajectoryWriter(
        settings.data_dir / "runs" / "run1" / "trajectory.json", mini_fix={"repo": repo, "issue": 3, "job_id": job.id}
    )
    writer.save([], config={}, stats=RunStats())
    queue = build_queue(settings)
    try:
        with TestClient(create_app(settings, ledger=ledger, queue=queue)) as client:
            deliver(client, "pull_request", merged)
            page = client.get("/runs", headers={"Authorization": f"Bearer {token}"})
    finally:
        queue.close()
    assert page.status_code == 200 and "<td>merged</td>" in page.text


def test_follow_ups_count_beside_the_retries_in_a_prs_outcome() -> None:
    from bot.cli.jobs_report import job_row
    from bot.jobs import Job, JobKind
    from bot.ledger.pr_outcomes import FOLLOWUPS, retry_counts

    def job(kind: JobKind, n: int) -> Job:
        return Job(
            f"j{n}", kind, 7, "acme/widgets", 3, "alice", f"d{n}", pr_url="https://github.com/acme/widgets/pull/9"
        )

    jobs = [job(JobKind.FIX, 1), job(JobKind.CI, 2), job(JobKind.REVIEW, 3), job(JobKind.CI, 4), job(JobKind.RETRY, 5)]
    assert retry_counts(jobs) == {("acme/widgets", 3): 1}
    assert retry_counts(jobs, FOLLOWUPS) == {("acme/widgets", 3): 3}
    outcome = {"state": "merged", "human_pushes": 0, "reviews": {"approved": 1}}
    row = job_row(jobs[0], {("acme/widgets", 9): outcome}, retries=1, followups=3)
    assert row["outcome"] == "merged, 1 approved, 1 retry, 3 follow-ups" and row["followups"] == 3


def test_retries_of_the_same_path_on_github_and_gitlab_are_counted_apart() -> None:
    from bot.cli.jobs_report import format_table, job_row
    from bot.forge_ids import installation_of
    from bot.jobs import Job, JobKind
    from bot.ledger.pr_outcomes import FOLLOWUPS, retry_counts

    gitlab = installation_of("acme/app")

    def job(kind: JobKind, n: int, installation: int) -> Job:
        return Job(f"j{n}", kind, installation, "acme/app", 3, "alice", f"d{n}")

    jobs = [job(JobKind.RETRY, 1, 7), job(JobKind.RETRY, 2, gitlab), job(JobKind.RETRY, 3, gitlab),
            job(JobKind.CI, 4, gitlab)]  # fmt: skip
    assert retry_counts(jobs) == {("acme/app", 3): 1, ("gitlab:acme/app", 3): 2}
    assert retry_counts(jobs, FOLLOWUPS) == {("gitlab:acme/app", 3): 1}
    assert [job_row(j)["repo"] for j in jobs[:2]] == ["acme/app", "gitlab:acme/app"]
    table = format_table(jobs).splitlines()
    assert table[1].split()[1] == "acme/app" and "1 retry" in table[1]  # the GitHub issue's one retry, not three
    assert table[2].split()[1] == "gitlab:acme/app" and "2 retries, 1 follow-up" in table[2]
