"""Fair share and the running cap: which run a free slot takes, decided and claimed in one step."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.fair import Candidate, ClaimPolicy, Use, choose
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import pool
from bot.worker.pool import Worker


def cand(job: str, inst: int, repo: str, created: float) -> Candidate:
    return Candidate(job, inst, repo, created)


def test_the_installation_with_fewer_runs_going_goes_first_whatever_its_age() -> None:
    old, young = cand("a9", 1, "a/x", 1.0), cand("b1", 2, "b/y", 50.0)
    usage = {(1, "a/x"): Use(running=2, recent=8, last=40.0)}
    assert choose([old, young], usage, ClaimPolicy()) == young
    # Both idle: the one that started a run least recently (B never did).
    usage = {(1, "a/x"): Use(running=0, recent=1, last=40.0)}
    assert choose([old, young], usage, ClaimPolicy()) == young
    # Nothing used by either: first come, first served.
    assert choose([young, old], {}, ClaimPolicy()) == old


def test_weights_give_an_owner_more_of_the_slots() -> None:
    a, b = cand("a", 1, "Acme/x", 1.0), cand("b", 2, "octo/y", 2.0)
    policy = ClaimPolicy(weights={"acme": 3.0})
    picks: list[str] = []
    usage: dict[tuple[int, str], Use] = {}
    for _ in range(8):  # 8 slots filled one by one, nothing finishing
        pick = choose([a, b], usage, policy)
        assert pick is not None
        picks.append(pick.job_id)
        use = usage.setdefault((pick.installation_id, pick.repo), Use())
        use.running += 1
    assert picks.count("a") == 6 and picks.count("b") == 2


def test_the_running_cap_leaves_a_capped_installation_out() -> None:
    a, b = cand("a", 1, "a/x", 1.0), cand("b", 2, "b/y", 2.0)
    usage = {(1, "a/x"): Use(running=1)}
    assert choose([a, b], usage, ClaimPolicy(running_cap=1)) == b
    assert choose([a], usage, ClaimPolicy(running_cap=1)) is None
    assert choose([a], usage, ClaimPolicy(running_cap=2)) == a


def test_inside_an_installation_the_less_used_repository_goes_first() -> None:
    busy, quiet = cand("1", 1, "a/busy", 1.0), cand("2", 1, "a/quiet", 9.0)
    usage = {(1, "a/busy"): Use(running=1, recent=3, last=5.0)}
    assert choose([busy, quiet], usage, ClaimPolicy()) == quiet


class Recorder:
    """A runner that records starts and how many runs of each installation overlap."""

    def __init__(self, seconds: float = 0.05) -> None:
        self.seconds = seconds
        self.started: list[Job] = []
        self.going: dict[int, int] = {}
        self.most: dict[int, int] = {}
        self.lock = threading.Lock()

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        with self.lock:
            self.started.append(job)
            self.going[job.installation_id] = self.going.get(job.installation_id, 0) + 1
            self.most[job.installation_id] = max(self.most.get(job.installation_id, 0), self.going[job.installation_id])
        time.sleep(self.seconds)
        with self.lock:
            self.going[job.installation_id] -= 1
        return JobOutcome(JobStatus.SUCCEEDED)


def submit(ledger: SqliteLedger, inst: int, owner: str, issue: int) -> Job:
    return ledger.submit(JobRequest(JobKind.FIX, inst, f"{owner}/repo", issue, "alice", f"{owner}-{issue}")).job


def wait_until(condition: Callable[[], bool], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.fixture
def quiet_reconciler(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reconciler sweeps once at start and not again in the test: nothing it re-dispatches hides a stall."""
    monkeypatch.setattr(pool, "RECONCILE_EVERY", 3600.0)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    made: list[Worker] = []
    yield made
    for worker in made:
        worker.stop(timeout=5)


def test_the_running_cap_holds_when_slots_race_for_one_installation(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    runner = Recorder(seconds=0.3)
    worker = Worker(settings.model_copy(update={"max_running_per_installation": 1}), ledger, job_queue, runner)
    jobs = [submit(ledger, 7, "acme", n) for n in range(6)]
    barrier = threading.Barrier(len(jobs))

    def slot(job: Job) -> None:
        barrier.wait()
        worker.run_job(job.id)

    threads = [threading.Thread(target=slot, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(runner.started) == 1 and runner.most == {7: 1}


def test_a_finishing_run_frees_its_place_before_a_waiting_sibling_is_woken(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue, quiet_reconciler: None, workers: list[Worker]
) -> None:
    finish = ledger.finish

    def slow_finish(*args: Any, **kwargs: Any) -> bool:
        time.sleep(0.2)  # a busy database: the sibling would look (within ms) while this run still counts as running
        return finish(*args, **kwargs)

    ledger.finish = slow_finish  # type: ignore[method-assign]
    runner = Recorder()
    capped = settings.model_copy(update={"max_running_per_installation": 1, "workers": 2})
    worker = Worker(capped, ledger, job_queue, runner)
    workers.append(worker)
    first, second = submit(ledger, 7, "acme", 1), submit(ledger, 7, "acme", 2)
    worker.start()
    assert wait_until(lambda: ledger.get(second.id).status == JobStatus.SUCCEEDED)  # type: ignore[union-attr]
    assert [j.id for j in runner.started] == [first.id, second.id] and runner.most == {7: 1}


def test_a_second_organisation_is_not_starved_by_a_burst(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue, workers: list[Worker]
) -> None:
    runner = Recorder(seconds=0.1)
    worker = Worker(settings.model_copy(update={"workers": 2}), ledger, job_queue, runner)
    workers.append(worker)
    burst = [submit(ledger, 1, "orga", n) for n in range(12)]
    late = [submit(ledger, 2, "orgb", n) for n in range(2)]
    for job in (*burst, *late):
        job_queue.enqueue(job.id)
    worker.start()
    assert wait_until(lambda: len(runner.started) == len(burst) + len(late))
    order = [j.installation_id for j in runner.started]
    fifth_of_a = [n for n, inst in enumerate(order) if inst == 1][4]
    assert order.index(2) < fifth_of_a, order  # first in, first out would start B 13th
    assert order[: order.index(2) + 1].count(1) <= 2  # B goes as soon as it is its turn


def test_a_control_jobs_spent_entry_still_wakes_a_slot_for_a_waiting_run(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    runner = Recorder(seconds=0)
    worker = Worker(settings, ledger, job_queue, runner)
    help_ = ledger.submit(JobRequest(JobKind.HELP, 7, "acme/repo", 1, "alice", "help")).job
    run = submit(ledger, 7, "acme", 2)
    assert worker.run_control(help_.id) == JobStatus.SUCCEEDED  # the control lane ran it
    assert worker.run_control(run.id) is None  # the control lane never takes a run
    assert worker.run_job(help_.id) == JobStatus.SUCCEEDED  # its queue entry, read later by a slot
    assert [j.id for j in runner.started] == [help_.id, run.id]
