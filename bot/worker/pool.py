"""The worker: claims jobs, keeps their lease alive, runs the pipeline, reconciles ledger and queue."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from functools import partial

import structlog

from bot import metrics
from bot.jobs import SHUTDOWN_REASON, CancelSignal, Job, JobKind, JobOutcome, JobStatus
from bot.ledger import open_ledger
from bot.ledger.contract import Ledger
from bot.ledger.fair import ClaimPolicy
from bot.queue.dispatch import JobQueue, build_queue
from bot.settings import Settings
from bot.worker.control_lane import ControlLane
from bot.worker.health import ChoreHealth
from bot.worker.usage import JobMeter, Price, metering

Runner = Callable[[Job, threading.Event], JobOutcome]
GaveUp = Callable[[Job], None]
RECONCILE_EVERY = 15.0
POLL_SECONDS = 0.5
NOT_PREPARED_WAIT = 5.0  # seconds a slot waits after a job found the worker not ready for it (`before_job`)
KEEP_ON_STOP = (JobStatus.SUCCEEDED, JobStatus.DENIED)  # outcomes worth recording even while shutting down

log = structlog.get_logger(__name__)


class Worker:
    """Runs up to settings.workers jobs at once; `stop()` (SIGTERM) puts running jobs back in the queue."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        queue: JobQueue,
        runner: Runner,
        *,
        on_gave_up: GaveUp | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.settings, self.ledger, self.queue = settings, ledger, queue
        self._runner = runner
        self._on_gave_up = on_gave_up
        self.housekeeping: Callable[[], None] | None = None  # e.g. sweeping expired sandbox containers
        self.chores: list[Callable[[threading.Event], None]] = []  # background loops, e.g. creating labels
        self.warm_ups: list[Callable[[], None]] = []  # run once before the first job is claimed (imports)
        self.ready = threading.Event()  # set once the warm-ups are done; the slots claim nothing before
        self.checks: dict[str, Callable[[], None]] = {}  # more readiness checks (the engine, the sandbox image)
        # before a run is claimed: what it needs made sure of (the sandbox image, made again when it went missing);
        # one that raises leaves the job in the queue, its claims unspent
        self.before_job: list[Callable[[], None]] = []
        self.after_stop: list[Callable[[], object]] = []  # once the slots stopped: e.g. GitHub writes still queued
        self.policy = ClaimPolicy(
            running_cap=settings.max_running_per_installation,
            weights=settings.fair_share_weights,
            window_seconds=settings.fair_share_window_seconds,
            max_claims=settings.max_claims,
        )
        self.price = Price.from_settings(settings)
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._stopping = threading.Event()
        self._running: dict[str, CancelSignal] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.control = ControlLane(ledger, self.run_control)  # /agent stop and help, never behind a run
        queue.bind(self.run_job)

    def start(self) -> None:
        """Start the job slots and the reconciler."""
        self._stopping.clear()
        self.ready.clear()
        targets: list[Callable[[], None]] = [self._warm_up, self._reconcile_loop]
        targets.append(partial(self.control.loop, self._stopping))
        targets += [self._slot] * max(1, self.settings.workers)
        targets += [partial(chore, self._stopping) for chore in self.chores]
        self._threads = [
            threading.Thread(target=target, name=f"worker-{n}", daemon=True) for n, target in enumerate(targets)
        ]
        for thread in self._threads:
            thread.start()
        metrics.WORKER_SLOTS.labels(role="worker").set(max(1, self.settings.workers))
        log.info("worker started", worker_id=self.worker_id, slots=self.settings.workers)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking jobs; cancel running ones and put them back in the queue (they are not failures)."""
        self._stopping.set()
        self.queue.wake()  # after the set: idle slots waiting on the queue see the stop now, not at their next poll
        with self._lock:
            for cancel in self._running.values():
                cancel.cancel(SHUTDOWN_REASON)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            stuck = list(self._running)
        for job_id in stuck:  # runners that did not return in time: their leases would expire anyway
            self._requeue(job_id)
        self._threads = []
        for hook in self.after_stop:
            try:
                hook()
            except Exception:  # shutting down: one hook's failure must not keep the others from running
                log.exception("after-stop hook failed")
        log.info("worker stopped", worker_id=self.worker_id, requeued_stuck=len(stuck))

    def close(self) -> None:
        """Stop, then close the ledger and the queue this worker uses."""
        self.stop()
        self.queue.close()
        self.ledger.close()

    @property
    def stopping(self) -> threading.Event:
        """Set once `stop()` began: loops that wait (a warm-up's retries) end on it."""
        return self._stopping

    def readiness(self) -> dict[str, str | None]:
        """Each readiness check's problem, None where it passes: warm-ups, ledger, queue, then `checks`."""
        checks: dict[str, Callable[[], object]] = {
            "warm_up": self._check_warmed_up,
            "ledger": partial(self.ledger.get, "readyz"),
            "queue": self.queue.depth,
            **self.checks,
        }
        return {name: check_problem(check) for name, check in checks.items()}

    def _check_warmed_up(self) -> None:
        if not self.ready.is_set():
            raise RuntimeError("warming up (imports, sandbox image)")

    def _warm_up(self) -> None:
        started = time.monotonic()
        for warm_up in self.warm_ups:
            try:
                warm_up()
            except Exception:  # a job that needs it fails with the real error later
                log.exception("warm-up failed")
        self.ready.set()
        log.info("worker ready", worker_id=self.worker_id, warm_up_seconds=round(time.monotonic() - started, 3))

    def _slot(self) -> None:
        while not self.ready.wait(POLL_SECONDS):  # a job claimed mid-import would wait out the import itself
            if self._stopping.is_set():
                return
        while not self._stopping.is_set():
            try:
                self.queue.run_next(POLL_SECONDS, self._stopping)
            except Exception:
                log.exception("queue read failed")
                self._stopping.wait(POLL_SECONDS)

    def _reconcile_loop(self) -> None:
        reconciling, sweeping = ChoreHealth("reconcile"), ChoreHealth("housekeeping")
        while not self._stopping.is_set():
            reconciling.run(self.reconcile)
            if self.housekeeping is not None:  # apart: a dead sandbox engine must not stop the reconciler
                sweeping.run(self.housekeeping)
            self._stopping.wait(RECONCILE_EVERY)

    def run_job(self, job_id: str) -> JobStatus | None:
        """Claim and run one job (a queue entry); the final status recorded, or None when nothing was claimable.

        A control job (`/agent stop`, help) is claimed by its id. Otherwise the id only says a run may wait: the
        slot claims the fairest claimable run (bot/ledger/fair.py), under the running cap in the same step."""
        if self._stopping.is_set():
            self.queue.enqueue(job_id)  # leave it for the next worker
            return None
        hinted = self.ledger.get(job_id)
        job = None
        if hinted is not None and hinted.kind.is_control:
            job = self.ledger.claim(job_id, self.worker_id, self.settings.lease_seconds)
        if job is None:  # a run's entry, or a control job's the control lane already ran: a run may still wait
            if not self._prepared(job_id):
                return None
            job = self.ledger.claim_next(self.worker_id, self.settings.lease_seconds, self.policy)
        return self._run_claimed(job, job_id)

    def run_control(self, job_id: str) -> JobStatus | None:
        """Claim and run one control job by its id (the control lane: never a run, which could take an hour)."""
        hinted = self.ledger.get(job_id)
        if hinted is None or not hinted.kind.is_control:
            return None
        return self._run_claimed(self.ledger.claim(job_id, self.worker_id, self.settings.lease_seconds), job_id)

    def _run_claimed(self, job: Job | None, job_id: str) -> JobStatus | None:
        if job is None:
            log.info("nothing claimable (done, stopped, held elsewhere, or at the running cap)", job_id=job_id)
            return None
        # a first claim: a quota wait gives its claim back but leaves its error, and its wait was observed once
        if job.attempts == 1 and job.error is None and job.created_at is not None:
            metrics.QUEUE_WAIT_SECONDS.observe(max(0.0, time.time() - job.created_at.timestamp()))
        cancel = CancelSignal()
        with self._lock:
            self._running[job.id] = cancel
        fields = {"job_id": job.id, "installation": job.installation_id, "repo": job.repo, "issue": job.issue}
        with structlog.contextvars.bound_contextvars(**fields):
            log.info("job started", kind=job.kind, attempt=job.attempts)
            outcome = self._run_with_lease(job, cancel)
            return self._settle(job, outcome)

    def _run_with_lease(self, job: Job, cancel: CancelSignal) -> JobOutcome:
        done = threading.Event()
        keeper = threading.Thread(target=self._keep_lease, args=(job.id, cancel, done), daemon=True)
        keeper.start()
        meter = None if job.kind.is_control else JobMeter(job, self.ledger.record_usage_nowait, self.price)
        began = time.monotonic()
        try:
            with metrics.job_run(job.kind.value), metering(meter):  # the runner meters its model and sandboxes
                return self._runner(job, cancel)
        except Exception as exc:  # the edge: a pipeline bug ends this job, never the worker
            log.exception("job runner raised")
            return JobOutcome(JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        finally:
            done.set()
            keeper.join()
            if meter is not None:
                meter.finish(time.monotonic() - began)

    def _keep_lease(self, job_id: str, cancel: CancelSignal, done: threading.Event) -> None:
        interval = min(self.settings.lease_seconds / 4, 5.0)
        while not done.wait(interval):
            try:
                held = self.ledger.renew(job_id, self.worker_id, self.settings.lease_seconds)
            except Exception:
                log.exception("lease renewal failed; retrying")
                continue
            if not held:
                stopped = self.ledger.get(job_id)
                reason = (stopped.error if stopped else None) or "the job was stopped"
                log.info("job was stopped; cancelling its run", reason=reason)
                cancel.cancel(reason)
                return

    def _prepared(self, job_id: str) -> bool:
        """Whether `before_job` holds before a run is claimed; when not, the id goes back to the queue (nothing is
        claimed) and this slot waits a little (the readiness probe says what is missing meanwhile)."""
        for prepare in self.before_job:
            try:
                prepare()
            except Exception as exc:  # the job waits for the worker, it does not fail for it
                log.warning("job left in the queue: this worker cannot run it yet", job_id=job_id, error=str(exc))
                self.queue.enqueue(job_id)
                self._stopping.wait(NOT_PREPARED_WAIT)
                return False
        return True

    def _wake_waiting(self) -> None:
        """A place under the running cap came free: one queue entry more, so a run the cap turned away (its entry
        spent) is taken now, on any worker, instead of at the reconciler's next sweep."""
        if self.settings.max_running_per_installation <= 0:
            return  # without a cap every queued run keeps its own entry until one slot claims something
        try:
            waiting = self.ledger.queued_ids()[:1]
        except Exception:
            log.warning("could not look for runs waiting on the cap", exc_info=True)
            return
        for job_id in waiting:
            self.queue.enqueue(job_id)

    def _settle(self, job: Job, outcome: JobOutcome) -> JobStatus | None:
        with self._lock:
            self._running.pop(job.id, None)
        if outcome.status == JobStatus.QUEUED and outcome.retry_in is not None:
            deferred = self._defer(job, outcome.retry_in, outcome.error or "deferred", spent=outcome.claim_spent)
            self._wake_waiting()
            return deferred
        if self._stopping.is_set() and outcome.status not in KEEP_ON_STOP:
            self._requeue(job.id)
            return JobStatus.QUEUED
        try:
            return self._finish(job, outcome)  # recorded before anything waiting is woken: its place is free
        finally:
            if not job.kind.is_control:
                self._wake_waiting()
                self._next_ask(job)

    def _finish(self, job: Job, outcome: JobOutcome) -> JobStatus:
        self.ledger.finish(
            job.id,
            self.worker_id,
            outcome.status,
            pr_url=outcome.pr_url,
            run_id=outcome.run_id,
            error=outcome.error,
        )
        final = self.ledger.get(job.id)
        status = final.status if final else outcome.status
        metrics.JOBS_FINISHED.labels(status=status.value).inc()
        if job.kind in (JobKind.CI, JobKind.REVIEW):
            metrics.FOLLOWUPS.labels(trigger=job.kind.value, outcome=status.value).inc()
        log.info("job finished", status=status, pr_url=outcome.pr_url, error=outcome.error)
        return status

    def _next_ask(self, job: Job) -> None:
        """The issue's run ended: the oldest ask that waited for it becomes its next run (folding the others)."""
        try:
            promoted = self.ledger.promote(job.repo, job.issue, installation_id=job.installation_id)
        except Exception:  # another replica promoted at the same moment (the one-active-run index); the reconciler
            log.warning("could not promote the next ask", exc_info=True)
            return
        if promoted is not None:
            log.info("next ask queued", job_id=promoted.id, kind=promoted.kind)
            self.queue.enqueue(promoted.id)

    def _defer(self, job: Job, seconds: float, error: str, *, spent: bool = True) -> JobStatus:
        """Back to the queue, claimable in `seconds` (the reconciler dispatches it then, on any worker); with
        `spent` False (a quota wait) the claim is given back."""
        if self.ledger.defer(job.id, self.worker_id, time.time() + seconds, error, spent=spent):
            log.info(
                "job put back in the queue for later",
                retry_in_s=seconds,
                attempt=job.attempts,
                claim_spent=spent,
                error=error,
            )
        metrics.JOBS_FINISHED.labels(status=JobStatus.QUEUED.value).inc()
        return JobStatus.QUEUED

    def _requeue(self, job_id: str) -> None:
        if self.ledger.requeue(job_id, self.worker_id):
            self.queue.enqueue(job_id)
            log.info("job put back in the queue", job_id=job_id)

    def reconcile(self) -> None:
        """Dispatch queued rows the queue lacks; retry expired leases, or fail them after max attempts."""
        pending = self.queue.pending_ids()
        for job in self.ledger.expired(time.time()):
            if job.attempts < self.settings.max_claims:
                if job.id not in pending:
                    log.warning("lease expired; dispatching again", job_id=job.id, attempts=job.attempts)
                    self.queue.enqueue(job.id)
            else:
                self._give_up(job)
        self.ledger.promote_idle()  # asks left waiting by a worker that died between a finish and its promote
        for job_id in self.ledger.queued_ids():
            if job_id not in pending:
                self.queue.enqueue(job_id)

    def _give_up(self, job: Job) -> None:
        error = f"the worker stopped responding {job.attempts} times; gave up"
        if job.worker_id is None or not self.ledger.finish(job.id, job.worker_id, JobStatus.FAILED, error=error):
            return
        log.error("job failed after max attempts", job_id=job.id, attempts=job.attempts)
        metrics.JOBS_FINISHED.labels(status=JobStatus.FAILED.value).inc()
        if self._on_gave_up is not None:
            self._on_gave_up(self.ledger.get(job.id) or job)


def check_problem(check: Callable[[], object]) -> str | None:
    """What a readiness check raised, None when it passes."""
    try:
        check()
    except Exception as exc:  # a readiness answer, not an error: the probe reports it
        return f"{type(exc).__name__}: {exc}"[:500]
    return None


def build_worker(
    settings: Settings, runner: Runner, *, on_gave_up: GaveUp | None = None, ledger: Ledger | None = None
) -> Worker:
    """A worker on the ledger and queue named by settings (call start(); stop() on SIGTERM)."""
    ledger = ledger or open_ledger(settings)
    return Worker(settings, ledger, build_queue(settings), runner, on_gave_up=on_gave_up)
