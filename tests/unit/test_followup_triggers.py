"""CI and review follow-ups on the webhook path: real-shaped deliveries, decided and recorded once per commit/review."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.settings import Settings
from bot.webhooks import decide

Examples = Callable[[str], list[dict[str, Any]]]
Deliver = Callable[..., Any]
BOT = "mini-fix-test[bot]"
SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


def _on_app_pr(payload: dict[str, Any], key: str, *, conclusion: str = "failure") -> dict[str, Any]:
    """A real `check_suite`/`workflow_run` payload moved onto the App's PR #9 for issue 3, the App's commit."""
    payload = copy.deepcopy(payload)
    suite = payload[key]
    repo_id = payload["repository"]["id"]
    payload["installation"] = {"id": 77}
    payload["sender"] = {"login": BOT, "type": "Bot"}
    suite.update(conclusion=conclusion, head_branch="mini-fix/issue-3", head_sha=SHA)
    suite["head_commit"] = {"id": SHA, "author": {"name": BOT}, "committer": {"name": BOT}}
    pull = {"number": 9, "head": {"ref": "mini-fix/issue-3", "sha": SHA, "repo": {"id": repo_id}}}
    suite["pull_requests"] = [{**pull, "base": {"ref": "main", "repo": {"id": repo_id}}}]
    return payload


@pytest.fixture
def suite(examples: Examples) -> dict[str, Any]:
    return _on_app_pr(next(p for p in examples("check_suite") if p["action"] == "completed"), "check_suite")


@pytest.fixture
def workflow_run(examples: Examples) -> dict[str, Any]:
    return _on_app_pr(next(p for p in examples("workflow_run") if p["action"] == "completed"), "workflow_run")


def test_a_failed_suite_on_the_apps_commit_asks_for_one_ci_follow_up(suite: dict[str, Any], settings: Settings) -> None:
    decision = decide("check_suite", suite, settings, delivery_id="d-1")
    assert decision.action == "enqueue", decision.reason
    job = decision.job
    assert job is not None and job.kind == JobKind.CI
    assert (job.repo, job.issue, job.requester, job.installation_id) == (suite["repository"]["full_name"], 3, BOT, 77)
    assert job.delivery_id == f"ci:{job.repo}:9:{SHA}"
    assert job.details.pull_request == 9 and job.details.head_sha == SHA


@pytest.mark.parametrize("conclusion", ["success", "cancelled", "skipped", "neutral", "stale", "action_required"])
def test_no_follow_up_unless_the_suite_failed(suite: dict[str, Any], settings: Settings, conclusion: str) -> None:
    suite["check_suite"]["conclusion"] = conclusion
    assert decide("check_suite", suite, settings, delivery_id="d-1").action == "ignore"


def test_timed_out_counts_as_a_failure(suite: dict[str, Any], settings: Settings) -> None:
    suite["check_suite"]["conclusion"] = "timed_out"
    assert decide("check_suite", suite, settings, delivery_id="d-1").action == "enqueue"


def _persons_push(p: dict[str, Any]) -> None:  # its commit claims the bot as author: the sender tells the truth
    p["sender"] = {"login": "ada", "type": "User"}


def _other_bot(p: dict[str, Any]) -> None:
    p["sender"] = {"login": "dependabot[bot]", "type": "Bot"}


def _persons_commit(p: dict[str, Any]) -> None:  # the bot's push of a commit a person authored
    p["check_suite"]["head_commit"]["author"] = {"name": "ada"}


def _fork(p: dict[str, Any]) -> None:
    p["check_suite"]["pull_requests"][0]["head"]["repo"]["id"] = 1


def _other_branch(p: dict[str, Any]) -> None:
    p["check_suite"]["head_branch"] = "feature/x"


def _no_pull(p: dict[str, Any]) -> None:
    p["check_suite"]["pull_requests"] = []


def _requested(p: dict[str, Any]) -> None:
    p["action"] = "requested"


@pytest.mark.parametrize(
    "change", [_persons_push, _other_bot, _persons_commit, _fork, _other_branch, _no_pull, _requested]
)
def test_no_follow_up_for_a_commit_or_pr_that_is_not_the_apps(
    suite: dict[str, Any], settings: Settings, change: Callable[[dict[str, Any]], None]
) -> None:
    change(suite)
    assert decide("check_suite", suite, settings, delivery_id="d-1").action == "ignore"


def test_a_failed_workflow_run_is_the_same_follow_up(workflow_run: dict[str, Any], settings: Settings) -> None:
    decision = decide("workflow_run", workflow_run, settings, delivery_id="d-2")
    assert decision.job is not None and decision.job.kind == JobKind.CI
    assert decision.job.delivery_id.endswith(f":9:{SHA}")


@pytest.mark.parametrize("event", ["check_run", "workflow_job"])
def test_single_runs_wait_for_the_suite(event: str, examples: Examples, settings: Settings) -> None:
    for payload in examples(event):
        payload["sender"] = {"login": BOT, "type": "Bot"}
        assert decide(event, payload, settings, delivery_id="d-1").action == "ignore"


@pytest.mark.parametrize("event", ["check_suite", "workflow_run", "pull_request_review_comment"])
def test_the_vendored_examples_ask_for_nothing(event: str, examples: Examples, settings: Settings) -> None:
    for payload in examples(event):  # none is on a mini-fix branch
        assert decide(event, payload, settings, delivery_id="d-1").action == "ignore"


def test_every_delivery_about_one_failed_commit_records_one_job(
    client: TestClient,
    deliver: Deliver,
    ledger: SqliteLedger,
    suite: dict[str, Any],
    workflow_run: dict[str, Any],
    examples: Examples,
) -> None:
    workflow_run["repository"] = suite["repository"]
    workflow_run["workflow_run"]["pull_requests"] = suite["check_suite"]["pull_requests"]
    run = next(p for p in examples("check_run") if p["action"] == "completed")
    run.update(installation={"id": 77}, sender={"login": BOT, "type": "Bot"})
    answers = [
        deliver(client, "check_run", run),
        deliver(client, "check_suite", suite),
        deliver(client, "workflow_run", workflow_run),
        deliver(client, "check_suite", suite),  # a redelivery under a new id (another replica, another body)
    ]
    assert [a.json()["action"] for a in answers] == ["ignore", "enqueue", "enqueue", "enqueue"]
    assert [a.json().get("created") for a in answers[1:]] == [True, False, False]
    assert [j.kind for j in ledger.list()] == [JobKind.CI]


# -- reviews --------------------


def _review(examples: Examples, state: str, *, sender: str = "ada") -> dict[str, Any]:
    payload = copy.deepcopy(next(p for p in examples("pull_request_review") if p["action"] == "submitted"))
    payload.update(installation={"id": 77}, sender={"login": sender, "type": "User"})
    payload["review"]["state"] = state
    payload["pull_request"]["number"] = 9
    payload["pull_request"]["head"]["ref"] = "mini-fix/issue-3"
    return payload


def _review_comment(examples: Examples, review_id: int) -> dict[str, Any]:
    payload = copy.deepcopy(next(p for p in examples("pull_request_review_comment") if p["action"] == "created"))
    payload.update(installation={"id": 77}, sender={"login": "ada", "type": "User"})
    payload["comment"]["pull_request_review_id"] = review_id
    payload["pull_request"]["number"] = 9
    payload["pull_request"]["head"]["ref"] = "mini-fix/issue-3"
    return payload


def test_changes_requested_asks_for_a_review_follow_up(examples: Examples, settings: Settings) -> None:
    payload = _review(examples, "CHANGES_REQUESTED")
    decision = decide("pull_request_review", payload, settings, delivery_id="d-1")
    assert decision.action == "enqueue" and decision.job is not None
    assert decision.job.kind == JobKind.REVIEW and decision.job.issue == 3 and decision.job.requester == "ada"
    assert decision.job.details.review_id == payload["review"]["id"]
    assert decision.pr_event is not None and decision.pr_event.review == "changes_requested"


@pytest.mark.parametrize("state", ["APPROVED", "COMMENTED"])
def test_approving_or_commenting_alone_only_records_the_verdict(
    examples: Examples, settings: Settings, state: str
) -> None:
    decision = decide("pull_request_review", _review(examples, state), settings, delivery_id="d-1")
    assert decision.action == "pr_outcome" and decision.job is None


def test_a_bots_review_or_a_review_of_another_branch_asks_for_nothing(examples: Examples, settings: Settings) -> None:
    bots = _review(examples, "CHANGES_REQUESTED")
    bots["sender"] = {"login": "lint[bot]", "type": "Bot"}
    theirs = _review(examples, "CHANGES_REQUESTED")
    theirs["pull_request"]["head"]["ref"] = "feature/x"
    for payload in (bots, theirs):
        assert decide("pull_request_review", payload, settings, delivery_id="d-1").job is None


def test_one_review_with_inline_comments_records_one_job(
    client: TestClient, deliver: Deliver, ledger: SqliteLedger, examples: Examples
) -> None:
    review = _review(examples, "CHANGES_REQUESTED")
    review_id = review["review"]["id"]
    repo = review["repository"]["full_name"]
    fix = ledger.submit(JobRequest(JobKind.FIX, 77, repo, 3, "ada", "d-fix")).job  # the job that opened PR #9
    assert ledger.claim(fix.id, "w1", 60) is not None
    ledger.finish(fix.id, "w1", JobStatus.SUCCEEDED, pr_url=f"https://github.com/{repo}/pull/9", run_id="r1")
    answers = [
        deliver(client, "pull_request_review_comment", _review_comment(examples, review_id)),
        deliver(client, "pull_request_review", review),
        deliver(client, "pull_request_review_comment", _review_comment(examples, review_id)),
    ]
    assert [a.json()["action"] for a in answers] == ["enqueue", "enqueue", "enqueue"]
    assert [a.json()["created"] for a in answers] == [True, False, False]
    assert sorted(j.kind for j in ledger.list()) == sorted([JobKind.FIX, JobKind.REVIEW])  # one review, one job
    [verdict] = ledger.unchecked_reviews()  # one verdict too, counted once the worker finds a writer wrote it
    assert ledger.settle_review(verdict, "write", counts=True)
    assert ledger.pr_outcomes()[(repo, 9)]["reviews"]["changes_requested"] == 1


def test_a_comment_of_a_commented_review_asks_for_a_follow_up(examples: Examples, settings: Settings) -> None:
    decision = decide("pull_request_review_comment", _review_comment(examples, 55), settings, delivery_id="d-1")
    assert decision.job is not None and decision.job.delivery_id.endswith(":9:55")
