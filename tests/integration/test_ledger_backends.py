"""The ledger on SQLite and on a real PostgreSQL: idempotency, one active job per issue, atomic claims, leases."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.forge_ids import installation_of, mr_number
from bot.jobs import InstallationChange, JobDetails, JobKind, JobRequest, JobStatus, PrEvent
from bot.ledger import open_ledger
from bot.ledger.fair import ClaimPolicy
from bot.ledger.usage import Usage
from bot.ledger.writer import GroupCommitWriter
from bot.settings import Settings
from tests.support.threads import run_in_threads

pytestmark = pytest.mark.postgres


@pytest.fixture
def ledger(settings: Settings) -> Iterator[Any]:
    led = open_ledger(settings)
    yield led
    led.close()


def request(issue: int = 1, delivery: str = "d-1", **kwargs: object) -> JobRequest:
    return JobRequest(JobKind.FIX, 77, "octo/widgets", issue, "alice", delivery, **kwargs)  # type: ignore[arg-type]


def test_submit_is_idempotent_on_delivery_id(ledger: Any) -> None:
    first = ledger.submit(request())
    again = ledger.submit(request())
    assert first.created and not again.created
    assert again.job.id == first.job.id
    assert [j.id for j in ledger.list()] == [first.job.id]


def test_rows_survive_a_reopen(ledger: Any, settings: Settings) -> None:
    job = ledger.submit(request(guidance="be brief", comment_id=5, details=JobDetails(label="bug", fresh=True))).job
    ledger.close()
    reopened = open_ledger(settings)
    try:
        assert reopened.get(job.id) == job
    finally:
        reopened.close()


def test_a_new_trigger_waits_and_cancels_nothing(ledger: Any) -> None:
    first = ledger.submit(request(delivery="a")).job
    assert ledger.claim(first.id, "w1", 60) is not None
    second = ledger.submit(request(delivery="b"))
    third = ledger.submit(request(delivery="c"))
    assert second.job.status == third.job.status == JobStatus.WAITING
    assert second.superseded == second.cancelled == [] and ledger.renew(first.id, "w1", 60)  # the run goes on
    assert [j.id for j in ledger.waiting_asks("octo/widgets", 1, installation_id=77)] == [second.job.id, third.job.id]
    assert ledger.promote("octo/widgets", 1, installation_id=77) is None  # the issue's run is active
    assert ledger.finish(first.id, "w1", JobStatus.SUCCEEDED)
    promoted = ledger.promote("octo/widgets", 1, installation_id=77)
    assert promoted is not None and promoted.id == second.job.id  # the oldest ask is the next run
    assert ledger.get(second.job.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
    assert ledger.settle_ask(third.job.id, JobStatus.FOLDED, f"carried by job {second.job.id}")
    assert not ledger.settle_ask(third.job.id, JobStatus.DENIED, "too late")  # settled once
    assert (
        ledger.promote("octo/widgets", 1, installation_id=77) is None
        and ledger.waiting_asks("octo/widgets", 1, installation_id=77) == []
    )


def test_a_writers_retry_takes_the_issue_over(ledger: Any) -> None:
    running = ledger.submit(request(delivery="a")).job
    assert ledger.claim(running.id, "w1", 60) is not None
    review = ledger.submit(JobRequest(JobKind.REVIEW, 77, "octo/widgets", 1, "bob", "review:1")).job
    retry = ledger.submit(JobRequest(JobKind.RETRY, 77, "octo/widgets", 1, "alice", "d-r", guidance="x")).job
    assert [j.id for j in ledger.waiting_retries()] == [retry.id]
    taken = ledger.take_over(retry.id)
    assert taken is not None and [j.id for j in taken.cancelled] == [running.id]
    assert taken.job.status == JobStatus.QUEUED and ledger.take_over(retry.id) is None
    assert not ledger.renew(running.id, "w1", 60)  # the worker learns it must stop
    assert ledger.get(running.id).error == "superseded by /agent retry from @alice"  # type: ignore[union-attr]
    assert [j.id for j in ledger.waiting_asks("octo/widgets", 1, installation_id=77)] == [
        review.id
    ]  # folded into the retry's run


def test_promote_idle_queues_what_a_dead_worker_left_waiting(ledger: Any) -> None:
    first = ledger.submit(request(delivery="a")).job
    waiting = ledger.submit(request(delivery="b")).job
    assert ledger.claim(first.id, "w1", 60) is not None and ledger.finish(first.id, "w1", JobStatus.FAILED)
    assert [j.id for j in ledger.promote_idle()] == [waiting.id]
    assert ledger.promote_idle() == [] and ledger.queued_ids() == [waiting.id]


def test_other_issues_are_untouched(ledger: Any) -> None:
    one = ledger.submit(request(issue=1, delivery="a")).job
    two = ledger.submit(request(issue=2, delivery="b"))
    assert two.superseded == [] and ledger.get(one.id).status == JobStatus.QUEUED  # type: ignore[union-attr]


def test_claim_is_atomic_across_threads_and_connections(ledger: Any, settings: Settings) -> None:
    job = ledger.submit(request()).job
    other = open_ledger(settings)  # a second process's view of the same database
    winners: list[str] = []
    barrier = threading.Barrier(8)

    def race(n: int) -> None:
        barrier.wait()
        if (other if n % 2 else ledger).claim(job.id, f"w{n}", 60) is not None:
            winners.append(f"w{n}")

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other.close()
    assert len(winners) == 1
    claimed = ledger.get(job.id)
    assert claimed is not None and claimed.worker_id == winners[0] and claimed.attempts == 1


def test_expired_lease_can_be_claimed_again(ledger: Any) -> None:
    job = ledger.submit(request()).job
    assert ledger.claim(job.id, "dead", -1) is not None  # a lease that has already run out
    assert [j.id for j in ledger.expired(time.time())] == [job.id]
    again = ledger.claim(job.id, "alive", 60)
    assert again is not None and again.attempts == 2 and again.worker_id == "alive"
    assert ledger.claim(job.id, "third", 60) is None
    assert not ledger.renew(job.id, "dead", 60)
    assert not ledger.finish(job.id, "dead", JobStatus.SUCCEEDED)


def test_requeue_gives_the_attempt_back(ledger: Any) -> None:
    job = ledger.submit(request()).job
    ledger.claim(job.id, "w", 60)
    assert ledger.requeue(job.id, "w")
    back = ledger.get(job.id)
    assert back is not None and back.status == JobStatus.QUEUED and back.attempts == 0
    assert ledger.queued_ids() == [job.id]


def test_defer_keeps_the_attempt_and_hides_the_job_until_its_time(ledger: Any) -> None:
    job = ledger.submit(request()).job
    ledger.claim(job.id, "w", 60)
    assert ledger.defer(job.id, "w", time.time() + 3600, "github_rate_limited: HTTP 403")
    assert not ledger.defer(job.id, "w", time.time(), "again")  # no longer held by w
    later = ledger.get(job.id)
    assert later is not None and (later.status, later.attempts, later.worker_id) == (JobStatus.QUEUED, 1, None)
    assert later.error == "github_rate_limited: HTTP 403"
    assert ledger.queued_ids() == [] and ledger.claim(job.id, "w2", 60) is None
    assert ledger.claim(job.id, "w", 60) is None


def test_a_deferred_job_is_claimable_once_due(ledger: Any) -> None:
    job = ledger.submit(request()).job
    ledger.claim(job.id, "w", 60)
    assert ledger.defer(job.id, "w", time.time() - 1, "github_rate_limited: HTTP 403")
    assert ledger.queued_ids() == [job.id]
    again = ledger.claim(job.id, "w2", 60)
    assert again is not None and again.attempts == 2 and again.worker_id == "w2"


def test_finish_records_the_outcome(ledger: Any) -> None:
    job = ledger.submit(request()).job
    ledger.claim(job.id, "w", 60)
    url = "https://github.com/octo/widgets/pull/12"
    assert ledger.finish(job.id, "w", JobStatus.SUCCEEDED, pr_url=url, run_id="r1")
    done = ledger.get(job.id)
    assert done is not None and (done.status, done.pr_url, done.run_id) == (JobStatus.SUCCEEDED, url, "r1")


def test_retry_on_our_pull_request_maps_to_its_issue(ledger: Any) -> None:
    job = ledger.submit(request(issue=5)).job
    ledger.claim(job.id, "w", 60)
    ledger.finish(job.id, "w", JobStatus.SUCCEEDED, pr_url="https://github.com/octo/widgets/pull/12")
    retry = ledger.submit(request(issue=12, delivery="r", details=JobDetails(on_pull_request=True))).job
    assert retry.issue == 5 and retry.details == JobDetails(on_pull_request=False, pull_request=12)
    unknown = ledger.submit(request(issue=99, delivery="u", details=JobDetails(on_pull_request=True))).job
    assert unknown.issue == 99 and unknown.details == JobDetails(on_pull_request=True)
    assert [j.id for j in ledger.cancel("octo/widgets", 12, "stop", installation_id=77, on_pull_request=True)] == [
        retry.id
    ]


def test_a_note_on_our_gitlab_merge_request_maps_to_its_issue(ledger: Any) -> None:
    job = ledger.submit(request(issue=5)).job
    ledger.claim(job.id, "w", 60)
    ledger.finish(job.id, "w", JobStatus.SUCCEEDED, pr_url="https://gitlab.example.org/octo/widgets/-/merge_requests/3")
    mr = mr_number(3)  # GitLab's MR !3, not issue #3
    retry = ledger.submit(request(issue=mr, delivery="r", details=JobDetails(on_pull_request=True))).job
    assert retry.issue == 5 and retry.details == JobDetails(on_pull_request=False, pull_request=mr)
    assert ledger.submit(request(issue=3, delivery="i", details=JobDetails(on_pull_request=True))).job.issue == 3
    ledger.record_pr_event(PrEvent(77, "octo/widgets", mr, "closed", "bob", merged=True))
    ledger.record_pr_event(PrEvent(77, "octo/widgets", mr_number(33), "closed", "bob", merged=True))  # not ours
    outcomes = ledger.pr_outcomes()
    assert outcomes[("octo/widgets", mr)]["merged"] and ("octo/widgets", mr_number(33)) not in outcomes


def test_installations_are_recorded(ledger: Any) -> None:
    ledger.record_installation(InstallationChange(77, "created", "octo", ("octo/a", "octo/b")))
    ledger.record_installation(InstallationChange(77, "added", "", ("octo/c",), ("octo/a",)))
    job = ledger.submit(request()).job
    assert [j.id for j in ledger.record_installation(InstallationChange(77, "suspend", "octo"))] == [job.id]
    assert ledger.installation(77) == {
        "account": "octo",
        "suspended": True,
        "repositories": ["octo/b", "octo/c"],
    }
    ledger.record_installation(InstallationChange(77, "deleted", "octo"))
    assert ledger.installation(77) is None


def test_concurrent_submits_are_all_committed(ledger: Any) -> None:
    futures = []
    lock = threading.Lock()

    def send(n: int) -> None:
        for i in range(25):
            future = ledger.submit_nowait(request(issue=n * 100 + i, delivery=f"{n}-{i}"))
            with lock:
                futures.append(future)

    threads = [threading.Thread(target=send, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = [f.result(timeout=30) for f in futures]
    assert all(r.created for r in results)
    assert len({r.job.id for r in results}) == 400 == len(ledger.list(limit=1000))


def test_a_failing_write_does_not_sink_its_batch(tmp_path: Path) -> None:
    def connect() -> sqlite3.Connection:
        return sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)

    with connect() as conn:
        conn.execute("CREATE TABLE t (v INTEGER UNIQUE)")
    writer = GroupCommitWriter(connect)
    futures = [writer.submit(lambda c, v=v: c.execute("INSERT INTO t VALUES (?)", (v,)).rowcount) for v in (1, 1, 2)]
    assert futures[0].result() == 1 and futures[2].result() == 1
    with pytest.raises(sqlite3.IntegrityError):
        futures[1].result()
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit(lambda c: None)
    assert [r[0] for r in connect().execute("SELECT v FROM t ORDER BY v")] == [1, 2]


def test_submit_needs_a_delivery_id(ledger: Any) -> None:
    with pytest.raises(ValueError, match="delivery id"):
        ledger.submit(request(delivery=""))


def test_postgres_writer_isolates_a_failing_write(settings: Settings) -> None:
    if not (settings.database_url or "").startswith("postgresql://"):
        pytest.skip("the SQLite writer has its own test above")
    import psycopg

    from bot.ledger.postgres.writer import PostgresGroupCommitWriter

    url = settings.database_url or ""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (v INTEGER UNIQUE)")
    writer = PostgresGroupCommitWriter(lambda: psycopg.connect(url, autocommit=True))
    futures = [writer.submit(lambda c, v=v: c.execute("INSERT INTO t VALUES (%s)", (v,)).rowcount) for v in (1, 1, 2)]
    assert futures[0].result() == 1 and futures[2].result() == 1
    with pytest.raises(psycopg.errors.UniqueViolation):
        futures[1].result()
    writer.close()
    with psycopg.connect(url) as conn:
        assert [r[0] for r in conn.execute("SELECT v FROM t ORDER BY v")] == [1, 2]


def test_two_processes_racing_one_delivery_record_one_job(ledger: Any, settings: Settings) -> None:
    others = [open_ledger(settings) for _ in range(3)]
    barrier = threading.Barrier(4)
    results: list[Any] = []

    def send(led: Any) -> None:
        barrier.wait()
        results.append(led.submit(request(delivery="same")))

    run_in_threads(send, [(led,) for led in [ledger, *others]])
    for led in others:
        led.close()
    assert sum(r.created for r in results) == 1
    assert {r.job.id for r in results} == {j.id for j in ledger.list()}


def test_installation_labels_chores_and_counts(ledger: Any) -> None:
    ledger.record_installation(InstallationChange(77, "created", "octo", ("octo/a", "octo/b")))
    assert ledger.installation_active(77) and ledger.installation_active(999)
    assert {ledger.take_label_chore(), ledger.take_label_chore()} == {(77, "octo/a"), (77, "octo/b")}
    assert ledger.take_label_chore() is None
    ledger.remember_label("octo/*", "org-label", installation_id=77)
    ledger.remember_label("octo/a", "fix-me", installation_id=77)
    assert (ledger.trigger_label("octo/a", installation_id=77), ledger.trigger_label("octo/z", installation_id=77)) == (
        "fix-me",
        "org-label",
    )
    ledger.remember_label("octo/a", None, installation_id=77)
    assert ledger.trigger_label("octo/a", installation_id=77) == "org-label"
    ledger.submit(request(issue=1, delivery="a"))
    ledger.submit(request(issue=2, delivery="b"))
    assert ledger.count_jobs(77, JobStatus.QUEUED) == 2
    assert ledger.count_jobs(77, JobStatus.QUEUED, other_than=("octo/widgets", 1)) == 1
    ledger.record_installation(InstallationChange(77, "deleted", "octo"))
    assert not ledger.installation_active(77)


def test_pr_outcomes_accumulate_per_pull_request(ledger: Any) -> None:
    events = [
        PrEvent(77, "octo/widgets", 9, "human_push", "ada"),
        PrEvent(77, "octo/widgets", 9, "human_push", "ada"),
        PrEvent(77, "octo/widgets", 9, "review", "bob", review="approved", review_id=5),
        PrEvent(77, "octo/widgets", 9, "review", "bob", review="approved", review_id=5),  # redelivered
        PrEvent(77, "octo/widgets", 9, "review", "eve", review="changes_requested", review_id=6),
        PrEvent(77, "octo/widgets", 11, "review", "bob", review="approved", review_id=7),  # not a job's PR
        PrEvent(77, "octo/widgets", 9, "closed", "bob", merged=True),
        PrEvent(77, "octo/widgets", 10, "closed", "bob"),
        PrEvent(77, "octo/widgets", 11, "closed", "eve"),  # no job of the ledger opened it: not recorded
    ]
    for pull, issue in ((9, 1), (10, 2)):
        job = ledger.submit(request(issue=issue, delivery=f"pr-{pull}")).job
        assert ledger.claim(job.id, "w1", 60) is not None
        ledger.finish(job.id, "w1", JobStatus.SUCCEEDED, pr_url=f"https://github.com/octo/widgets/pull/{pull}")
    for event in events:
        ledger.record_pr_event(event)
    assert ledger.pr_outcomes()[("octo/widgets", 9)]["reviews"]["approved"] == 0  # reviews wait for their check
    bob, eve = ledger.unchecked_reviews()
    assert (bob.by, bob.review_id, eve.by) == ("bob", 5, "eve")
    assert ledger.settle_review(bob, "write", counts=True) and ledger.settle_review(eve, "read", counts=False)
    assert not ledger.settle_review(bob, "write", counts=True) and ledger.unchecked_reviews() == []
    outcomes = ledger.pr_outcomes()
    assert outcomes[("octo/widgets", 9)] == {
        "state": "merged",
        "merged": True,
        "human_pushes": 2,
        "reviews": {"approved": 1, "changes_requested": 0, "commented": 0},
    }
    assert outcomes[("octo/widgets", 10)]["state"] == "closed" and ("octo/widgets", 11) not in outcomes


def test_one_signed_body_records_one_job_on_any_replica(ledger: Any, settings: Settings) -> None:
    replicas = [open_ledger(settings) for _ in range(3)]  # API replicas sharing the database
    barrier = threading.Barrier(4)
    results: list[Any] = []

    def send(led: Any, delivery: str) -> None:
        barrier.wait()
        results.append(led.submit(request(delivery=delivery, body_digest="ab" * 32)))

    run_in_threads(send, [(led, f"d-{n}") for n, led in enumerate([ledger, *replicas])])
    for led in replicas:
        led.close()
    assert sum(r.created for r in results) == 1 and sum(r.replayed for r in results) == 3
    assert {r.job.id for r in results} == {j.id for j in ledger.list()}
    redelivery = ledger.submit(request(delivery=next(r.job.delivery_id for r in results if r.created)))
    assert redelivery.created is False and redelivery.replayed is False  # GitHub's redelivery is not a replay
    other = ledger.submit(request(issue=2, delivery="d-other"))  # requests no webhook body asked for: no digest
    assert other.created and ledger.submit(request(issue=3, delivery="d-third")).created


OLD_JOBS = """CREATE TABLE jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, installation_id BIGINT NOT NULL, repo TEXT NOT NULL,
    issue INTEGER NOT NULL, requester TEXT NOT NULL, delivery_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,
    guidance TEXT NOT NULL DEFAULT '', comment_id BIGINT, attempts INTEGER NOT NULL DEFAULT 0,
    lease_expires_at DOUBLE PRECISION, worker_id TEXT, pr_url TEXT, run_id TEXT, error TEXT,
    created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
    extra TEXT NOT NULL DEFAULT '{}'{seq})"""


def test_a_ledger_from_before_the_body_digest_is_migrated(settings: Settings) -> None:
    url = settings.database_url or ""
    old_row = ("old1", "fix", 77, "octo/widgets", 9, "alice", "d-old", "succeeded", 1.0, 1.0)
    insert = "INSERT INTO jobs (id, kind, installation_id, repo, issue, requester, delivery_id, status, created_at, "
    insert += "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(OLD_JOBS.replace("{seq}", ""))
            conn.execute(insert, old_row)
    else:
        import psycopg

        with psycopg.connect(url) as conn:
            conn.execute(OLD_JOBS.replace("{seq}", ", seq BIGSERIAL"))
            conn.execute(insert.replace("?", "%s"), old_row)
    led = open_ledger(settings)
    try:
        assert led.get("old1") is not None
        assert led.submit(request(delivery="d-1", body_digest="cd" * 32)).created
        assert led.submit(request(delivery="d-2", body_digest="cd" * 32)).replayed
    finally:
        led.close()


def test_follow_ups_are_runs_one_per_key(ledger: Any) -> None:
    fix = ledger.submit(request(delivery="d-fix")).job
    ci_req = JobRequest(JobKind.CI, 77, "octo/widgets", 1, "mini-fix[bot]", "ci:octo/widgets:9:abc")
    ci = ledger.submit(ci_req)
    assert ci.created and ci.job.status == JobStatus.WAITING and ci.superseded == []
    assert not ledger.submit(ci_req).created  # another delivery about the same failed commit
    review = ledger.submit(JobRequest(JobKind.REVIEW, 77, "octo/widgets", 1, "alice", "review:octo/widgets:9:5"))
    assert review.job.status == JobStatus.WAITING and ledger.get(fix.id).status == JobStatus.QUEUED
    assert [j.kind for j in ledger.issue_jobs("octo/widgets", 1, installation_id=77)] == [
        JobKind.FIX,
        JobKind.CI,
        JobKind.REVIEW,
    ]


PREVIOUS_EXTRA = {  # what the previous version wrote in `extra`: a dict of untyped keys (one this version lacks)
    "old-fix": {"label": "AI-fix"},
    "old-retry": {"on_pull_request": False, "pull_request": 12, "fresh": True},
    "old-review": {"pull_request": 9, "review_id": "55", "head_sha": "abc", "delivery": "d-9", "someday": [1]},
    "old-full": {"queue_full": True},
    "old-odd": {"pull_request": "not a number", "fresh": "yes", "label": 3},
}


def test_rows_written_by_the_previous_version_load_as_typed_details(ledger: Any, settings: Settings) -> None:
    ledger.submit(request(delivery="d-new"))  # the schema exists
    insert = "INSERT INTO jobs (id, kind, installation_id, repo, issue, requester, delivery_id, status, created_at, "
    insert += "updated_at, extra) VALUES (?, 'fix', 77, 'octo/widgets', ?, 'alice', ?, 'queued', 1.0, 1.0, ?)"
    rows = [
        (job_id, n + 10, f"d-{job_id}", json.dumps(extra)) for n, (job_id, extra) in enumerate(PREVIOUS_EXTRA.items())
    ]
    url = settings.database_url or ""
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.executemany(insert, rows)
    else:
        import psycopg

        with psycopg.connect(url) as conn:
            conn.cursor().executemany(insert.replace("?", "%s"), rows)
    assert ledger.get("old-fix").details == JobDetails(label="AI-fix")
    assert ledger.get("old-retry").details == JobDetails(pull_request=12, fresh=True)
    assert ledger.get("old-review").details == JobDetails(pull_request=9, review_id=55, head_sha="abc", delivery="d-9")
    assert ledger.get("old-full").details == JobDetails(queue_full=True)
    assert ledger.get("old-odd").details == JobDetails()  # values of the wrong type are ignored, not a crash
    # the queue cap still leaves queue-full rows out, old and new (a new row stores the key only when set)
    assert ledger.count_jobs(77, JobStatus.QUEUED) == 5
    ledger.submit(request(issue=40, delivery="d-full", details=JobDetails(queue_full=True)))
    ledger.submit(request(issue=41, delivery="d-plain", details=JobDetails(queue_full=False)))
    assert ledger.count_jobs(77, JobStatus.QUEUED) == 6


def test_claim_next_holds_the_running_cap_across_connections(ledger: Any, settings: Settings) -> None:
    for n in range(6):
        ledger.submit(request(issue=n, delivery=f"d{n}"))
    other = open_ledger(settings)  # a second worker process on the same database
    policy = ClaimPolicy(running_cap=2)
    won: list[str] = []

    def race(n: int) -> None:
        if (job := (other if n % 2 else ledger).claim_next(f"w{n}", 60, policy)) is not None:
            won.append(job.id)

    run_in_threads(race, [(n,) for n in range(8)])
    other.close()
    assert len(won) == len(set(won)) == 2
    assert ledger.claim_next("late", 60, policy) is None  # at the cap until one of them ends
    assert ledger.finish(won[0], ledger.get(won[0]).worker_id, JobStatus.SUCCEEDED)
    assert ledger.claim_next("late", 60, policy) is not None


def test_claim_next_takes_the_installation_that_used_least(ledger: Any) -> None:
    busy = [ledger.submit(request(issue=n, delivery=f"a{n}")).job for n in range(3)]
    quiet = ledger.submit(JobRequest(JobKind.CI, 88, "other/repo", 1, "bob", "b1")).job  # follow-ups count too
    policy = ClaimPolicy(max_claims=3)
    assert ledger.claim_next("w1", 60, policy).id == busy[0].id  # oldest first while nobody runs anything
    assert ledger.claim_next("w2", 60, policy).id == quiet.id  # 77 runs one, 88 none: 88 goes before 77's older
    assert ledger.claim_next("w3", 60, policy).id == busy[1].id
    assert ledger.claim_next("w4", 60, policy).id == busy[2].id
    assert ledger.claim_next("w5", 60, policy) is None


def test_claim_next_takes_back_a_dead_workers_run_until_its_claims_are_spent(ledger: Any) -> None:
    job = ledger.submit(request()).job
    policy = ClaimPolicy(max_claims=2)
    assert ledger.claim_next("dead", -1, policy).id == job.id  # its lease ran out at once
    again = ledger.claim_next("alive", -1, policy)
    assert again is not None and again.attempts == 2
    assert ledger.claim_next("third", 60, policy) is None  # the reconciler fails it now


def usage_row(job_id: str, claim: str, version: int, *, final: bool = False, calls: int = 1, **more: Any) -> Usage:
    values: dict[str, Any] = {"installation_id": 77, "repo": "octo/widgets", "day": "2026-12-05", **more}
    return Usage(job_id, claim, 1, version=version, final=final, calls=calls, prompt_tokens=100 * calls,
                 completion_tokens=10 * calls, model_seconds=0.5 * calls, **values)  # fmt: skip


def test_usage_is_recorded_once_whatever_arrives_twice_or_late(ledger: Any) -> None:
    assert ledger.record_usage(usage_row("j1", "c1", 1, calls=1))
    assert ledger.record_usage(usage_row("j1", "c1", 2, calls=2))
    assert not ledger.record_usage(usage_row("j1", "c1", 2, calls=2))  # the same write again
    assert not ledger.record_usage(usage_row("j1", "c1", 1, calls=1))  # an older one, late
    assert ledger.record_usage(usage_row("j1", "c1", 3, final=True, calls=2, wall_seconds=9.0))
    assert not ledger.record_usage(usage_row("j1", "c1", 4, calls=5))  # nothing replaces a final row
    # The job resumed after its worker died: its new claim has a row of its own.
    assert ledger.record_usage(usage_row("j1", "c2", 1, final=True, calls=3))
    rows = ledger.job_usage("j1")
    assert [(r.claim, r.calls, r.final) for r in rows] == [("c1", 2, True), ("c2", 3, True)]
    [total] = ledger.usage_totals([])
    assert (total["jobs"], total["calls"], total["prompt_tokens"], total["completion_tokens"]) == (1, 5, 500, 50)
    assert total["wall_seconds"] == 9.0


def test_usage_sums_by_repository_installation_and_day(ledger: Any) -> None:
    ledger.record_usage(usage_row("a", "c", 1, calls=1))
    ledger.record_usage(usage_row("b", "c", 1, calls=2, day="2026-12-04"))
    ledger.record_usage(usage_row("c", "c", 1, calls=4, installation_id=88, repo="other/repo"))
    by_repo = ledger.usage_totals(["repo"])
    assert [(r["repo"], r["jobs"], r["calls"]) for r in by_repo] == [("other/repo", 1, 4), ("octo/widgets", 2, 3)]
    by_day = ledger.usage_totals(["installation", "day"], installation_id=77)
    assert [(r["installation"], r["day"], r["calls"]) for r in by_day] == [(77, "2026-12-04", 2), (77, "2026-12-05", 1)]
    assert [r["calls"] for r in ledger.usage_totals([], since="2026-12-05")] == [5]


def test_usage_by_repository_keeps_a_gitlab_project_apart_from_the_github_repository_of_its_path(ledger: Any) -> None:
    gitlab = installation_of("octo/widgets")  # GitLab's group `octo`: a spender other than GitHub's `octo`
    ledger.record_usage(usage_row("a", "c", 1, calls=1))
    ledger.record_usage(usage_row("b", "c", 1, calls=2, installation_id=gitlab))
    ledger.record_usage(usage_row("c", "c", 1, calls=4, installation_id=installation_of("octo/other")))
    by_repo = ledger.usage_totals(["repo"])
    assert [(r["repo"], r["jobs"], r["calls"]) for r in by_repo] == [
        ("gitlab:octo/widgets", 2, 6), ("octo/widgets", 1, 1),
    ]  # fmt: skip
    by_both = ledger.usage_totals(["repo", "installation"])
    assert [(r["repo"], r["installation"], r["calls"]) for r in by_both] == [
        ("gitlab:octo/widgets", gitlab, 6), ("octo/widgets", 77, 1),
    ]  # fmt: skip
    [total] = ledger.usage_totals([])  # the deployment's total: both forges
    assert total["calls"] == 7


def test_follow_ups_started_count_claimed_ones_only_not_those_a_quota_turned_away(ledger: Any) -> None:
    def ran(kind: JobKind, repo: str, issue: int, delivery: str, error: str | None = None) -> str:
        job = ledger.submit(JobRequest(kind, 77, repo, issue, "alice", delivery)).job
        assert ledger.claim(job.id, "w", 60) is not None
        ledger.finish(job.id, "w", JobStatus.CANCELLED if error else JobStatus.SUCCEEDED, error=error)
        return str(job.id)

    ran(JobKind.FIX, "octo/widgets", 1, "f")
    ran(JobKind.CI, "octo/widgets", 1, "c1")
    ran(JobKind.REVIEW, "octo/other", 2, "r1")
    ran(JobKind.CI, "octo/widgets", 1, "c2", error="quota_exceeded: follow-ups per PR")
    asking = ran(JobKind.CI, "octo/widgets", 1, "c3")
    assert ledger.followups_started(77, asking, 0.0, ("octo/widgets", 1)) == 1
    assert ledger.followups_started(77, asking, 0.0) == 2
    assert ledger.followups_started(77, "none", 0.0) == 3
    assert ledger.followups_started(88, "none", 0.0) == ledger.followups_started(77, "none", time.time() + 60) == 0


def test_a_process_starting_takes_no_table_lock_from_workers_mid_transaction(ledger: Any, settings: Settings) -> None:
    if not settings.uses_postgres:
        pytest.skip("SQLite's schema statements run under its own write lock")
    import psycopg

    ledger.submit(request())
    with psycopg.connect(settings.database_url or "") as reader:  # a worker mid-claim: it read `jobs`, writes next
        reader.execute("SELECT COUNT(*) FROM jobs").fetchone()
        opened: list[Any] = []
        starting = threading.Thread(target=lambda: opened.append(open_ledger(settings)), daemon=True)
        starting.start()
        starting.join(30)  # an ALTER TABLE would wait here for the reader's transaction (and deadlock its write)
        stuck = starting.is_alive()
        reader.rollback()
    starting.join(30)
    for other in opened:
        other.close()
    assert not stuck


def test_a_runs_start_is_marked_on_the_row_it_holds_keeping_its_details(ledger: Any) -> None:
    job = ledger.submit(request(details=JobDetails(pull_request=9, head_sha="abc"))).job
    assert not ledger.mark_ran(job.id, "w1")  # not claimed: nothing marked
    assert ledger.claim(job.id, "w1", 60) is not None
    assert not ledger.mark_ran(job.id, "w2")  # another worker's hold
    assert ledger.mark_ran(job.id, "w1") and ledger.mark_ran(job.id, "w1")  # idempotent
    details = ledger.get(job.id).details
    assert details.ran and details.pull_request == 9 and details.head_sha == "abc"
