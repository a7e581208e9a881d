"""The same path on GitHub and on GitLab is two repositories to the ledger, on SQLite and on a real PostgreSQL.

GitHub `acme/app` and a GitLab project `acme/app` may belong to different owners: a stop, a retry, a waiting ask,
a follow-up count or a remembered label of one must never reach the other. The forge is the sign of a job's
installation id; the installation itself is not matched (a reinstalled GitHub App's older jobs are still its own).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from bot.forge_ids import installation_of, mr_number
from bot.jobs import JobKind, JobRequest, JobStatus, PrEvent
from bot.ledger import open_ledger
from bot.settings import Settings

pytestmark = pytest.mark.postgres

REPO = "acme/app"
GH, GH_AGAIN = 77, 78  # a GitHub installation, and the same organisation's after it reinstalled the App
GL = installation_of(REPO)  # negative: GitLab's top-level namespace `acme`


@pytest.fixture
def ledger(settings: Settings) -> Iterator[Any]:
    led = open_ledger(settings)
    yield led
    led.close()


def ask(inst: int, delivery: str, kind: JobKind = JobKind.FIX, issue: int = 5, who: str = "alice") -> JobRequest:
    return JobRequest(kind, inst, REPO, issue, who, delivery)


def running(ledger: Any, inst: int, delivery: str) -> Any:
    job = ledger.submit(ask(inst, delivery)).job
    assert job.status == JobStatus.QUEUED and ledger.claim(job.id, "w", 60) is not None
    return job


def test_both_forges_issues_run_at_once_and_a_stop_ends_only_its_own(ledger: Any) -> None:
    github, gitlab = running(ledger, GH, "gh"), running(ledger, GL, "gl")  # neither "already running"
    stopped = ledger.cancel(REPO, 5, "/agent stop by @dev", installation_id=GL)
    assert [j.id for j in stopped] == [gitlab.id]
    assert ledger.renew(github.id, "w", 60) and not ledger.renew(gitlab.id, "w", 60)
    again = running(ledger, GL, "gl-again")
    stopped = ledger.cancel(REPO, 5, "/agent stop by @owner", installation_id=GH_AGAIN)  # after a reinstall
    assert [j.id for j in stopped] == [github.id] and ledger.renew(again.id, "w", 60)


def test_waiting_asks_retries_and_promotion_stay_on_their_forge(ledger: Any) -> None:
    github, gitlab = running(ledger, GH, "gh"), running(ledger, GL, "gl")
    review = ledger.submit(ask(GL, "gl-review", JobKind.REVIEW, who="bob")).job
    retry = ledger.submit(ask(GH, "gh-retry", JobKind.RETRY)).job
    assert review.status == retry.status == JobStatus.WAITING
    assert [j.id for j in ledger.waiting_asks(REPO, 5, installation_id=GH_AGAIN)] == [retry.id]
    assert [j.id for j in ledger.waiting_asks(REPO, 5, installation_id=GL)] == [review.id]
    assert [j.id for j in ledger.issue_jobs(REPO, 5, installation_id=GL)] == [gitlab.id, review.id]
    taken = ledger.take_over(retry.id)
    assert taken is not None and [j.id for j in taken.cancelled] == [github.id] and taken.superseded == []
    assert ledger.renew(gitlab.id, "w", 60) and ledger.get(review.id).status == JobStatus.WAITING
    assert ledger.promote(REPO, 5, installation_id=GH) is None  # the retry is GitHub's active run now
    assert ledger.finish(gitlab.id, "w", JobStatus.SUCCEEDED)
    promoted = ledger.promote(REPO, 5, installation_id=GL)
    assert promoted is not None and promoted.id == review.id


def test_promote_idle_promotes_each_forges_issue_by_its_own_runs(ledger: Any) -> None:
    github, gitlab = running(ledger, GH, "gh"), running(ledger, GL, "gl")
    gh_ask, gl_ask = ledger.submit(ask(GH, "gh-2")).job, ledger.submit(ask(GL, "gl-2")).job
    assert ledger.finish(github.id, "w", JobStatus.FAILED)  # its worker died before promoting
    assert [j.id for j in ledger.promote_idle()] == [gh_ask.id]  # GitLab's ask still waits for GitLab's run
    assert ledger.get(gl_ask.id).status == JobStatus.WAITING and ledger.renew(gitlab.id, "w", 60)


def test_follow_up_counts_are_per_forge_and_survive_a_reinstall(ledger: Any) -> None:
    for inst, delivery in ((GH, "gh-ci"), (GL, "gl-ci")):
        job = ledger.submit(ask(inst, delivery, JobKind.CI, who="mini-fix[bot]")).job
        assert ledger.claim(job.id, "w", 60) is not None and ledger.finish(job.id, "w", JobStatus.SUCCEEDED)
    asking = ledger.submit(ask(GH_AGAIN, "gh-ci-2", JobKind.CI, who="mini-fix[bot]")).job
    assert ledger.followups_started(GH_AGAIN, asking.id, 0.0, (REPO, 5)) == 1  # GitHub's, under the old id
    assert ledger.followups_started(GL, asking.id, 0.0, (REPO, 5)) == 1  # GitLab's own only
    assert ledger.followups_started(GH_AGAIN, asking.id, 0.0) == 0  # installation-wide counts stay exact


def test_remembered_trigger_labels_are_per_forge(ledger: Any) -> None:
    ledger.remember_label(REPO, "gh-fix", installation_id=GH)
    ledger.remember_label("acme/*", "gl-org-fix", installation_id=GL)
    assert ledger.trigger_label(REPO, installation_id=GH_AGAIN) == "gh-fix"
    assert ledger.trigger_label(REPO, installation_id=GL) == "gl-org-fix"  # GitHub's acme/app is not its own
    assert ledger.trigger_label("acme/other", installation_id=GH) is None  # nor GitLab's group label GitHub's
    ledger.remember_label(REPO, None, installation_id=GL)  # forgetting GitLab's keeps GitHub's
    assert ledger.trigger_label(REPO, installation_id=GH) == "gh-fix"


def test_reviews_with_one_id_on_both_forges_are_kept_and_settled_apart(ledger: Any) -> None:
    for inst, delivery, url in (
        (GH, "gh", "https://github.com/acme/app/pull/9"),
        (GL, "gl", "https://gitlab.example.org/acme/app/-/merge_requests/9"),
    ):
        job = running(ledger, inst, delivery)
        ledger.finish(job.id, "w", JobStatus.SUCCEEDED, pr_url=url)
    ledger.record_pr_event(PrEvent(GH, REPO, 9, "review", "bob", review="approved", review_id=5))
    ledger.record_pr_event(PrEvent(GL, REPO, mr_number(9), "review", "eve", review="changes_requested", review_id=5))
    kept = ledger.unchecked_reviews()
    assert sorted((r.installation_id, r.repo, r.by) for r in kept) == [(GL, REPO, "eve"), (GH, REPO, "bob")]
    assert all(ledger.settle_review(r, "write", counts=True) for r in kept) and ledger.unchecked_reviews() == []
    outcomes = ledger.pr_outcomes()
    assert outcomes[(REPO, 9)]["reviews"]["approved"] == 1
    assert outcomes[(REPO, mr_number(9))]["reviews"]["changes_requested"] == 1


OLD_INDEX = (
    "CREATE UNIQUE INDEX jobs_one_active_job ON jobs (repo, issue) "
    "WHERE status IN ('queued', 'running') AND kind IN ('fix', 'retry', 'ci', 'review')"
)


def test_a_ledger_with_the_per_path_index_is_migrated_and_its_rows_still_count(settings: Settings) -> None:
    led = open_ledger(settings)
    old = led.submit(ask(GH, "old")).job
    led.close()
    url = settings.database_url or ""
    statements = ("DROP INDEX jobs_one_active_issue", OLD_INDEX)  # as the previous version left the ledger
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            for statement in statements:
                conn.execute(statement)
    else:
        import psycopg

        with psycopg.connect(url) as conn:
            for statement in statements:
                conn.execute(statement)
    led = open_ledger(settings)
    try:
        gitlab = led.submit(ask(GL, "gl")).job
        later = led.submit(ask(GH_AGAIN, "gh-2")).job
        assert gitlab.status == JobStatus.QUEUED and later.status == JobStatus.WAITING  # the old row: GitHub's run
        assert {j.id for j in led.cancel(REPO, 5, "stop", installation_id=GH)} == {old.id, later.id}
        assert led.get(gitlab.id).status == JobStatus.QUEUED
    finally:
        led.close()
