"""The operator's guards: allow/deny lists, the per-installation queue cap (worker comments) and running cap."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from bot.jobs import Job, JobDetails, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.policy import QUEUE_FULL, refusal
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker.pool import Worker
from tests.support.fake_github import FakeGitHub
from tests.support.scripted_model import bash
from tests.support.webhooks import labeled
from tests.unit import test_pipeline
from tests.unit.test_pipeline import FIX, SUBMIT, World

github = test_pipeline.github  # the fake GitHub fixture, shared with the pipeline tests


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"max_queued_per_installation": 2, "max_running_per_installation": 1, "deny_repos": ["acme/secret"]}
    )


def test_the_third_queued_trigger_of_an_installation_is_marked_queue_full(
    client: TestClient, deliver: Callable[..., Any], ledger: SqliteLedger
) -> None:
    answers = [deliver(client, "issues", labeled("acme/widgets", n, sender="alice")).json() for n in (1, 2, 3)]
    jobs = [ledger.get(a["job_id"]) for a in answers]
    assert [j.details.queue_full for j in jobs if j] == [False, False, True]
    assert "queue full" in answers[2]["reason"]
    # Re-labelling a queued issue replaces its job: it is not one more in the queue.
    again = deliver(client, "issues", labeled("acme/widgets", 1, sender="alice")).json()
    assert not ledger.get(again["job_id"]).details.queue_full  # type: ignore[union-attr]
    # Another installation has its own quota.
    other = deliver(client, "issues", labeled("acme/widgets", 9, sender="alice", installation=2)).json()
    assert not ledger.get(other["job_id"]).details.queue_full  # type: ignore[union-attr]


def test_the_worker_posts_the_queue_full_comment_and_runs_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    world.settings = world.settings.model_copy(update={"max_queued_per_installation": 5})
    outcome = world.run(details=JobDetails(queue_full=True))
    assert outcome.status == JobStatus.CANCELLED and outcome.error and outcome.error.startswith(QUEUE_FULL)
    [comment] = world.issue_comments()
    assert "5 runs waiting" in comment and "/agent retry" in comment
    assert world.sandboxes == [] and github.git_requests == []


def test_denied_repositories_get_no_job(client: TestClient, deliver: Callable[..., Any], ledger: SqliteLedger) -> None:
    answer = deliver(client, "issues", labeled("acme/secret", 1, sender="alice")).json()
    assert answer == {"action": "ignore", "reason": "repository acme/secret is in MINIFIX_DENY_REPOS"}
    assert ledger.list() == []


def test_allow_and_deny_lists() -> None:
    open_to_all = Settings(_env_file=None)
    assert refusal(open_to_all, "anyone/thing") is None
    listed = Settings(allow_owners="acme,Octo", allow_repos="solo/one", deny_owners="evil", _env_file=None)
    assert refusal(listed, "ACME/widgets") is None and refusal(listed, "octo/x") is None
    assert refusal(listed, "solo/one") is None
    assert "not in MINIFIX_ALLOW_OWNERS" in (refusal(listed, "solo/two") or "")
    assert "MINIFIX_DENY_OWNERS" in (refusal(listed, "evil/x") or "")
    both = Settings(allow_owners="acme", deny_repos="acme/secret", _env_file=None)
    assert "MINIFIX_DENY_REPOS" in (refusal(both, "acme/secret") or "")


class Gate:
    """A runner whose jobs wait until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started: list[str] = []

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        self.started.append(job.id)
        self.release.wait(20)
        return JobOutcome(JobStatus.SUCCEEDED)


def wait_until(condition: Callable[[], bool]) -> bool:
    for _ in range(2000):
        if condition():
            return True
        threading.Event().wait(0.01)
    return condition()


def test_a_slot_turned_away_by_the_running_cap_takes_another_installations_run(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    gate = Gate()
    worker = Worker(settings, ledger, job_queue, gate)
    first, second = (ledger.submit(JobRequest(JobKind.FIX, 7, "acme/widgets", n, "alice", f"d{n}")).job for n in (1, 2))
    other = ledger.submit(JobRequest(JobKind.FIX, 8, "acme/widgets", 3, "alice", "d3")).job
    slots = [threading.Thread(target=worker.run_job, args=(first.id,))]
    slots[0].start()
    assert wait_until(lambda: first.id in gate.started)
    # The entry of installation 7's second job wakes a slot; 7 runs its cap, so the slot takes installation 8's.
    slots.append(threading.Thread(target=worker.run_job, args=(second.id,)))
    slots[1].start()
    assert wait_until(lambda: other.id in gate.started)
    assert ledger.get(second.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
    assert worker.run_job(second.id) is None  # nothing claimable: 7 is at its cap, 8's run is taken
    gate.release.set()
    for slot in slots:
        slot.join(20)
    assert second.id in job_queue.pending_ids()  # dispatched again once a place under the cap came free
    assert worker.run_job(second.id) == JobStatus.SUCCEEDED
    assert gate.started == [first.id, other.id, second.id]
