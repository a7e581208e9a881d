"""What the SQLite and PostgreSQL ledgers share: per-thread connections, the writer and the SQL of ledger_sql."""

from __future__ import annotations

import builtins
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, Protocol, TypeVar

from bot.jobs import InstallationChange, Job, JobRequest, JobStatus, PrEvent
from bot.ledger import followups, pr_outcomes, sql, usage
from bot.ledger.contract import SubmitResult
from bot.ledger.writer import BatchWriter, Connection


class Db(Connection, Protocol):
    """A DB-API connection as the shared reads use it."""

    def execute(self, sql: str, params: Any, /) -> Any: ...


C = TypeVar("C", bound=Db)
T = TypeVar("T")


class Ops(Protocol):
    """A driver's ops module (bot/ledger_sqlite_ops.py, bot/ledger_postgres_ops.py)."""

    def submit(self, conn: Any, req: JobRequest) -> SubmitResult: ...


class Installs(Protocol):
    """A driver's installations module (bot/ledger_*_installs.py)."""

    def record(self, conn: Any, change: InstallationChange) -> None: ...
    def active(self, conn: Any, installation_id: int) -> bool: ...
    def count(self, conn: Any, installation_id: int, status: str, *, other_than: tuple[str, int] | None) -> int: ...


class SqlLedger(Generic[C]):
    """The Ledger's rules over one DB-API driver; subclasses connect, claim and run single-row updates."""

    dialect: sql.Dialect
    ops: Ops
    installs: Installs

    def __init__(self, writer: BatchWriter[C]) -> None:
        self._writer = writer
        self._local = threading.local()
        self._conns: builtins.list[C] = []
        self._conns_lock = threading.Lock()

    def _connect(self) -> C:
        raise NotImplementedError

    def _usable(self, conn: C) -> bool:
        return True

    def _conn(self) -> C:
        conn: C | None = getattr(self._local, "conn", None)
        if conn is None or not self._usable(conn):
            conn = self._local.conn = self._connect()
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _update(self, text: str, *params: Any) -> bool:
        """Run one UPDATE of a job this worker holds; True when it changed the row."""
        raise NotImplementedError

    def _on_conn(self, use: Callable[[C], T]) -> T:
        """`use` this thread's connection; once more on a new one if it turned out dead (the server restarted)."""
        conn = self._conn()
        try:
            return use(conn)
        except Exception:
            if self._usable(conn):
                raise
            return use(self._conn())

    def _read(self, text: str, params: tuple[Any, ...] = ()) -> Any:
        return self._on_conn(lambda conn: conn.execute(self.dialect.sql(text), params))

    def submit_nowait(self, req: JobRequest) -> Future[SubmitResult]:
        """Record a job; the future resolves once the row is committed."""
        if not req.delivery_id:
            raise ValueError("a job request needs its delivery id (idempotency key)")
        return self._writer.submit(lambda conn: self.ops.submit(conn, req))

    def submit(self, req: JobRequest) -> SubmitResult:
        """Record a job and wait for the commit."""
        return self.submit_nowait(req).result()

    def cancel(
        self, repo: str, issue: int, reason: str, *, installation_id: int, on_pull_request: bool = False
    ) -> builtins.list[Job]:
        """Cancel the issue's queued or running job (on the forge of `installation_id`); returns the jobs stopped."""
        return self._writer.submit(
            lambda conn: sql.cancel(self.dialect, conn, repo, issue, installation_id, reason, on_pull_request)
        ).result()

    def take_over(self, job_id: str) -> SubmitResult | None:
        """A writer's waiting retry becomes the issue's queued run, cancelling the running one; None when it no
        longer waits."""

        def op(conn: C) -> SubmitResult | None:
            stopped = sql.take_over(self.dialect, conn, job_id)
            if stopped is None:
                return None
            job = sql.select_jobs(self.dialect, conn, "id = ?", (job_id,))[0]
            return SubmitResult(job, created=False, superseded=stopped[0], cancelled=stopped[1])

        return self._writer.submit(op).result()

    def waiting_asks(self, repo: str, issue: int, *, installation_id: int) -> builtins.list[Job]:
        """The issue's asks waiting for its next run (on the forge of `installation_id`), oldest first."""
        return self._on_conn(lambda conn: sql.waiting_asks(self.dialect, conn, repo, issue, installation_id))

    def waiting_retries(self) -> builtins.list[Job]:
        """Every waiting `/agent retry` (its requester's permission decides whether it takes its issue over)."""
        where = f"status = 'waiting' AND kind = 'retry' ORDER BY created_at, {self.dialect.tiebreak}"
        return self._on_conn(lambda conn: sql.select_jobs(self.dialect, conn, where))

    def settle_ask(self, job_id: str, status: JobStatus, error: str) -> bool:
        """End a waiting ask (folded into a run, denied, cancelled); False when it no longer waits."""
        return bool(self._writer.submit(lambda c: sql.settle_ask(self.dialect, c, job_id, status, error)).result())

    def promote(self, repo: str, issue: int, *, installation_id: int) -> Job | None:
        """The issue's oldest waiting ask queued as its next run, when the issue has no active run."""
        return self._writer.submit(lambda c: sql.promote(self.dialect, c, repo, issue, installation_id)).result()

    def promote_idle(self) -> builtins.list[Job]:
        """`promote` on every issue that has waiting asks and no active run."""
        return self._writer.submit(lambda conn: sql.promote_idle(self.dialect, conn)).result()

    def record_installation(self, change: InstallationChange) -> builtins.list[Job]:
        """Record an installation event (and its label chores); returns the jobs it cancelled."""

        def op(conn: C) -> builtins.list[Job]:
            self.installs.record(conn, change)
            return sql.record_installation(self.dialect, conn, change)

        return self._writer.submit(op).result()

    def record_pr_event(self, event: PrEvent) -> None:
        """Record what happened to one of mini-fix's PRs (closed, merged, a person's push, a review)."""
        self._writer.submit(lambda conn: pr_outcomes.record(conn, self.dialect.param, event)).result()

    def pr_outcomes(self) -> dict[tuple[str, int], dict[str, Any]]:
        """Every recorded PR's outcome, by (repo, PR number)."""
        return pr_outcomes.load(self._conn())

    def unchecked_reviews(self, limit: int = 50) -> builtins.list[PrEvent]:
        """The oldest reviews of mini-fix's PRs whose author's permission is still to be asked (at most `limit`)."""
        return self._on_conn(lambda conn: pr_outcomes.unchecked_reviews(conn, self.dialect.param, limit))

    def settle_review(self, review: PrEvent, permission: str, counts: bool) -> bool:
        """Record the reviewer's permission ("" when GitHub could not say) and count the verdict when `counts`;
        False when the review was settled already."""

        def op(conn: C) -> bool:
            return pr_outcomes.settle_review(conn, self.dialect.param, review, permission, counts)

        return bool(self._writer.submit(op).result())

    def installation_active(self, installation_id: int) -> bool:
        """False when the installation was deleted or is suspended."""
        return self._on_conn(lambda conn: self.installs.active(conn, installation_id))

    def trigger_label(self, repo: str, *, installation_id: int) -> str | None:
        """The trigger label a worker last read from the repository's (or its owner's) config, on the forge of
        `installation_id`; None = default."""
        return self._on_conn(lambda conn: sql.trigger_label(self.dialect, conn, repo, installation_id))

    def count_jobs(self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None) -> int:
        """Fix and retry jobs of an installation in `status` (queue-full ones and one issue's left out)."""
        return self._on_conn(lambda c: self.installs.count(c, installation_id, status.value, other_than=other_than))

    def record_usage_nowait(self, use: usage.Usage) -> Future[bool]:
        """Write one claim's usage totals (bot/ledger/usage.py: a newer version only, never over a final row)."""
        return self._writer.submit(lambda conn: usage.record(self.dialect, conn, use, time.time()))

    def record_usage(self, use: usage.Usage) -> bool:
        """`record_usage_nowait`, waiting for the commit; False when the row held a newer or final version."""
        return self.record_usage_nowait(use).result()

    def usage_totals(
        self, by: builtins.list[str], *, since: str = "", installation_id: int | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Usage summed by `by` (repo, installation, day) from the UTC day `since` on; by repo, each forge's apart (a
        GitLab project's `repo` is `gitlab:group/project`, bot/ledger/usage.py)."""
        return self._on_conn(lambda c: usage.totals(self.dialect, c, by, since=since, installation_id=installation_id))

    def followups_started(
        self, installation_id: int, job_id: str, since: float, issue: tuple[str, int] | None = None
    ) -> int:
        """CI and review follow-ups started from `since` (epoch s), other than `job_id`: the installation's, or with
        `issue` that issue's on the installation's forge."""
        return self._on_conn(lambda c: followups.started(self.dialect, c, installation_id, job_id, since, issue))

    def job_usage(self, job_id: str) -> builtins.list[usage.Usage]:
        """A job's usage rows, one per claim."""
        return self._on_conn(lambda conn: usage.claims(self.dialect, conn, job_id))

    def installation(self, installation_id: int) -> dict[str, Any] | None:
        """The recorded installation: account, suspended, repositories; None when unknown or deleted."""
        text = "SELECT account, suspended, repositories FROM installations WHERE id = ?"
        row = self._read(text, (installation_id,)).fetchone()
        if row is None:
            return None
        return {"account": row[0], "suspended": bool(row[1]), "repositories": json.loads(row[2])}

    def get(self, job_id: str) -> Job | None:
        """One job, or None."""
        found = self._on_conn(lambda conn: sql.select_jobs(self.dialect, conn, "id = ?", (job_id,)))
        return found[0] if found else None

    def list(self, limit: int = 50) -> builtins.list[Job]:
        """The newest jobs first."""
        where = f"1 = 1 ORDER BY created_at DESC, {self.dialect.tiebreak} DESC LIMIT ?"
        return self._on_conn(lambda conn: sql.select_jobs(self.dialect, conn, where, (limit,)))

    def issue_jobs(self, repo: str, issue: int, *, installation_id: int) -> builtins.list[Job]:
        """Every job of one issue on the forge of `installation_id` (control jobs left out), oldest first."""
        where = f"{sql.ISSUE} AND {sql.RUNS} ORDER BY created_at, {self.dialect.tiebreak}"
        key = sql.issue_params(repo, issue, installation_id)
        return self._on_conn(lambda conn: sql.select_jobs(self.dialect, conn, where, key))

    def renew(self, job_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend the lease; False when the job is no longer running under this worker."""
        return self._update(sql.RENEW, time.time() + lease_seconds, job_id, worker_id)

    def mark_ran(self, job_id: str, worker_id: str) -> bool:
        """Record that the job's run started (`JobDetails.ran`: a CI follow-up counts toward `ci_followups` only
        then); idempotent, so a resumed run that starts again changes nothing. False if not held by worker_id."""
        return self._update(self.dialect.mark_ran(), job_id, worker_id)

    def finish(
        self,
        job_id: str,
        worker_id: str,
        status: JobStatus,
        *,
        pr_url: str | None = None,
        run_id: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Record a run's end; a cancelled job stays cancelled. False when another worker holds it."""
        return self._update(sql.FINISH, status.value, pr_url, run_id, error, time.time(), job_id, worker_id)

    def requeue(self, job_id: str, worker_id: str) -> bool:
        """Back to queued without spending an attempt (the worker is shutting down)."""
        return self._update(sql.REQUEUE, time.time(), job_id, worker_id)

    def defer(self, job_id: str, worker_id: str, until: float, error: str, *, spent: bool = True) -> bool:
        """Back to queued, claimable again from `until` (epoch s); the attempt stays spent unless `spent` is False
        (a quota wait: nothing ran), when the claim is given back in the same UPDATE."""
        statement = sql.DEFER if spent else sql.DEFER_UNSPENT
        return self._update(statement, until, error, time.time(), job_id, worker_id)

    def expired(self, now: float) -> builtins.list[Job]:
        """Running jobs whose lease ended before `now`."""
        where = "status = 'running' AND lease_expires_at < ?"
        return self._on_conn(lambda conn: sql.select_jobs(self.dialect, conn, where, (now,)))

    def queued_ids(self, *, control: bool = False) -> builtins.list[str]:
        """Ids of every queued job that may run now (only `/agent` control jobs with control=True), oldest first."""
        kinds = f" AND NOT ({sql.RUNS})" if control else ""
        rows = self._read(
            f"SELECT id FROM jobs WHERE status = 'queued' AND {sql.DUE}{kinds} "
            f"ORDER BY created_at, {self.dialect.tiebreak}",
            (time.time(),),
        )
        return [r[0] for r in rows]

    def fleet(self) -> tuple[dict[str, int], float | None]:
        """Jobs by status across every worker, and the oldest queued job's creation time (epoch s, or None)."""
        counts = {str(r[0]): int(r[1]) for r in self._read("SELECT status, COUNT(*) FROM jobs GROUP BY status")}
        oldest = self._read("SELECT MIN(created_at) FROM jobs WHERE status = 'queued'").fetchone()[0]
        return counts, None if oldest is None else float(oldest)

    def is_cancelled(self, job_id: str) -> bool:
        """True when the job was cancelled or superseded."""
        job = self.get(job_id)
        return job is not None and job.status in (JobStatus.CANCELLED, JobStatus.SUPERSEDED)

    def close(self) -> None:
        """Commit what is queued, stop the writer, close every connection."""
        self._writer.close()
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
