"""The ledger's SQL shared by SQLite and PostgreSQL, written once with `?` placeholders; a Dialect says what differs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from bot.forge_ids import forge_key, iid_of, is_gitlab, is_mr
from bot.jobs import InstallationChange, Job, JobDetails, JobKind, JobRequest, JobStatus

COLUMNS = (
    "id, kind, installation_id, repo, issue, requester, delivery_id, status, guidance, comment_id, attempts, "
    "lease_expires_at, worker_id, pr_url, run_id, error, created_at, updated_at, extra"
)
INSERT_COLUMNS = f"{COLUMNS}, body_sha256"  # the body's digest is written, never read back into a Job
BODY_COLUMN = "body_sha256 TEXT"  # added to ledgers created before it (NULL: a job no webhook body asked for)
BODY_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_body ON jobs (body_sha256)"  # NULLs never clash
STARTED_INDEX = "CREATE INDEX IF NOT EXISTS jobs_started ON jobs (started_at)"  # fair share's recent window
ACTIVE = "status IN ('queued', 'running')"
LIVE = "status IN ('queued', 'running', 'waiting')"  # what a cancel ends: the active run and the asks waiting for it
RUNS = "kind IN ('fix', 'retry', 'ci', 'review')"  # control jobs (help, stop) never count as an issue's active job
# One forge's jobs: the sign of the installation id (bot/forge_ids.py). The same path may exist on GitHub and on
# GitLab, of different owners, so whatever names a repository or an issue names its forge too; the installation
# itself is not matched: a reinstalled GitHub App gets a new id, and the issue's older jobs are still its own.
FORGE = "(installation_id < 0) = ?"
ISSUE = f"repo = ? AND issue = ? AND {FORGE}"  # one issue of one forge; its parameters: `issue_params`
# At most one active run per issue of each forge (replaces jobs_one_active_job, which keyed (repo, issue) alone).
ONE_ACTIVE_INDEX = (
    "CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_active_issue ON jobs (repo, issue, (installation_id < 0)) "
    f"WHERE status IN ('queued', 'running') AND {RUNS}"
)
RENEW = "UPDATE jobs SET lease_expires_at = ? WHERE id = ? AND worker_id = ? AND status = 'running'"
FINISH = (
    "UPDATE jobs SET status = CASE status WHEN 'running' THEN ? ELSE status END, "
    "pr_url = COALESCE(?, pr_url), run_id = COALESCE(?, run_id), error = COALESCE(?, error), "
    "lease_expires_at = NULL, updated_at = ? WHERE id = ? AND worker_id = ?"
)
REQUEUE = (
    "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_expires_at = NULL, "
    "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = ? "
    "WHERE id = ? AND worker_id = ? AND status = 'running'"
)
# A queued row's lease_expires_at is when it may run again (NULL: now); the deferred claim stays spent, except
# where nothing of the run started (a quota wait): DEFER_UNSPENT gives it back in the same UPDATE.
_DEFER = (
    "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_expires_at = ?, error = ?, {claims}updated_at = ? "
    "WHERE id = ? AND worker_id = ? AND status = 'running'"
)
DEFER = _DEFER.format(claims="")
DEFER_UNSPENT = _DEFER.format(claims="attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, ")
DUE = "(lease_expires_at IS NULL OR lease_expires_at <= ?)"
UPSERT_INSTALLATION = (
    "INSERT INTO installations (id, account, suspended, repositories, updated_at) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET account = CASE WHEN excluded.account = '' THEN installations.account "
    "ELSE excluded.account END, suspended = COALESCE(CAST(? AS INTEGER), installations.suspended), "
    "repositories = excluded.repositories, updated_at = excluded.updated_at"
)
Stopped = tuple[list[Job], list[Job]]
StopActive = Callable[[Any, str, tuple[Any, ...], str, JobStatus], Stopped]


@dataclass(frozen=True)
class Dialect:
    """What differs between the two databases' SQL."""

    param: str  # the driver's placeholder
    lock: str  # row lock for a read-then-write ("" where the transaction already holds the write lock)
    tiebreak: str  # the column that orders rows created in the same instant
    stop_active: StopActive  # end the active jobs matching a WHERE clause
    ran_extra: str  # `extra` (a JSON object's text) with "ran": true set, the other keys kept

    def mark_ran(self) -> str:
        """The UPDATE that records, on a running job this worker holds, that its run started (`JobDetails.ran`)."""
        return f"UPDATE jobs SET extra = {self.ran_extra} WHERE id = ? AND worker_id = ? AND status = 'running'"

    def sql(self, text: str) -> str:
        """`text` with its `?` placeholders in this driver's style."""
        return text if self.param == "?" else text.replace("?", self.param)


def when(epoch: float | None) -> datetime | None:
    """A stored epoch as an aware datetime."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def row_to_job(row: tuple[Any, ...]) -> Job:
    """A Job from a row of COLUMNS."""
    (id_, kind, inst, repo, issue, requester, delivery, status, guidance, comment_id, attempts,
     lease, worker, pr_url, run_id, error, created, updated, extra) = row  # fmt: skip
    return Job(
        id_, JobKind(kind), inst, repo, issue, requester, delivery, JobStatus(status), guidance, comment_id,
        attempts, when(lease), worker, pr_url, run_id, error, when(created), when(updated), JobDetails.from_json(extra),
    )  # fmt: skip


def pr_url_pattern(pull: int) -> str:
    """The LIKE pattern of the url of PR `pull`: `/pull/N` on GitHub; on GitLab a merge request goes by its iid
    lifted above every issue's (bot/forge_ids.py) and its url ends `/-/merge_requests/<iid>`."""
    return f"%/merge_requests/{iid_of(pull)}" if is_mr(pull) else f"%/pull/{pull}"


def forge_of(installation_id: int) -> bool:
    """FORGE's parameter for a job of `installation_id`."""
    return is_gitlab(installation_id)


def issue_params(repo: str, issue: int, installation_id: int) -> tuple[str, int, bool]:
    """ISSUE's parameters: issue `repo`#`issue` on the forge of `installation_id`."""
    return repo, issue, forge_of(installation_id)


def select_jobs(d: Dialect, conn: Any, where: str, params: tuple[Any, ...] = ()) -> list[Job]:
    """The jobs matching `where`."""
    return [row_to_job(r) for r in conn.execute(d.sql(f"SELECT {COLUMNS} FROM jobs WHERE {where}"), params)]


def issue_of_pull(d: Dialect, conn: Any, repo: str, pull: int, installation_id: int) -> int | None:
    """The issue whose job opened PR #pull (of `repo` on the forge of `installation_id`), if the ledger knows it."""
    row = conn.execute(
        d.sql(f"SELECT issue FROM jobs WHERE repo = ? AND {FORGE} AND pr_url LIKE ? ORDER BY created_at DESC LIMIT 1"),
        (repo, forge_of(installation_id), pr_url_pattern(pull)),
    ).fetchone()
    return None if row is None else int(row[0])


def on_issue(d: Dialect, conn: Any, req: JobRequest) -> JobRequest:
    """A request made on a PR moved to the issue whose job opened that PR (unchanged when unknown)."""
    if (
        not req.details.on_pull_request
        or (issue := issue_of_pull(d, conn, req.repo, req.issue, req.installation_id)) is None
    ):
        return req
    return replace(req, issue=issue, details=replace(req.details, on_pull_request=False, pull_request=req.issue))


def take_over(d: Dialect, conn: Any, job_id: str) -> Stopped | None:
    """A writer's waiting `/agent retry` takes the issue over: its running run cancelled, a queued one back to
    waiting (folded into the retry's run), the retry queued. None when the retry is no longer waiting."""
    found = select_jobs(d, conn, "id = ? AND status = 'waiting'", (job_id,))
    if not found:
        return None
    retry = found[0]
    reason = f"superseded by /agent retry from @{retry.requester}"
    key = issue_params(retry.repo, retry.issue, retry.installation_id)
    _, running = d.stop_active(conn, f"status = 'running' AND {RUNS} AND {ISSUE}", key, reason, JobStatus.CANCELLED)
    queued = select_jobs(d, conn, f"status = 'queued' AND {RUNS} AND {ISSUE}", key)
    conn.execute(
        d.sql(f"UPDATE jobs SET status = 'waiting', updated_at = ? WHERE status = 'queued' AND {RUNS} AND {ISSUE}"),
        (time.time(), *key),
    )
    conn.execute(d.sql("UPDATE jobs SET status = 'queued', updated_at = ? WHERE id = ?"), (time.time(), job_id))
    return queued, running


def waiting_asks(d: Dialect, conn: Any, repo: str, issue: int, installation_id: int) -> list[Job]:
    """The issue's asks waiting for its next run, oldest first."""
    where = f"status = 'waiting' AND {ISSUE} ORDER BY created_at, {d.tiebreak}"
    return select_jobs(d, conn, where, issue_params(repo, issue, installation_id))


def settle_ask(d: Dialect, conn: Any, job_id: str, status: JobStatus, error: str) -> bool:
    """End a waiting ask (folded into a run, denied, cancelled); False when it no longer waits."""
    changed = conn.execute(
        d.sql("UPDATE jobs SET status = ?, error = ?, updated_at = ? WHERE id = ? AND status = 'waiting'"),
        (status.value, error, time.time(), job_id),
    ).rowcount
    return bool(changed == 1)


def promote(d: Dialect, conn: Any, repo: str, issue: int, installation_id: int) -> Job | None:
    """The issue's oldest waiting ask made its queued run, when the issue has no active run; else None."""
    if select_jobs(d, conn, f"{ACTIVE} AND {RUNS} AND {ISSUE}", issue_params(repo, issue, installation_id)):
        return None
    oldest = waiting_asks(d, conn, repo, issue, installation_id)[:1]
    if not oldest:
        return None
    conn.execute(
        d.sql("UPDATE jobs SET status = 'queued', updated_at = ? WHERE id = ? AND status = 'waiting'"),
        (time.time(), oldest[0].id),
    )
    return replace(oldest[0], status=JobStatus.QUEUED)


def promote_idle(d: Dialect, conn: Any) -> list[Job]:
    """`promote` on every issue with waiting asks and no active run (a worker died between a finish and its
    promote, or a cancelled run's worker never came back)."""
    rows = conn.execute(
        d.sql(
            "SELECT DISTINCT w.repo, w.issue, CASE WHEN w.installation_id < 0 THEN -1 ELSE 1 END FROM jobs w "
            "WHERE w.status = 'waiting' AND NOT EXISTS (SELECT 1 FROM jobs a WHERE a.repo = w.repo "
            "AND a.issue = w.issue AND (a.installation_id < 0) = (w.installation_id < 0) "
            "AND a.status IN ('queued', 'running') AND a.kind IN ('fix', 'retry', 'ci', 'review'))"
        ),
        (),
    ).fetchall()  # the third column stands for the forge: promote matches the sign of an installation id only
    return [job for repo, issue, forge in rows if (job := promote(d, conn, repo, issue, int(forge))) is not None]


def cancel(
    d: Dialect, conn: Any, repo: str, issue: int, installation_id: int, reason: str, on_pull_request: bool
) -> list[Job]:
    """Cancel the issue's (or the PR's issue's) active run on the forge of `installation_id`; the jobs stopped."""
    if on_pull_request:
        issue = issue_of_pull(d, conn, repo, issue, installation_id) or issue
    key = issue_params(repo, issue, installation_id)
    queued, running = d.stop_active(conn, f"{RUNS} AND {ISSUE}", key, reason, JobStatus.CANCELLED)
    return queued + running  # the waiting asks too: a stop or a close ends everything asked of the issue


def record_installation(d: Dialect, conn: Any, change: InstallationChange) -> list[Job]:
    """Upsert the installation (or delete it); stop its active jobs when it was deleted or suspended."""
    select = d.sql(f"SELECT repositories FROM installations WHERE id = ?{d.lock}")
    row = conn.execute(select, (change.installation_id,)).fetchone()
    repos = (set(json.loads(row[0])) if row else set()) | set(change.repositories_added)
    suspended = {"suspend": 1, "unsuspend": 0}.get(change.action)
    conn.execute(
        d.sql(UPSERT_INSTALLATION),
        (change.installation_id, change.account, suspended or 0,
         json.dumps(sorted(repos - set(change.repositories_removed))), time.time(), suspended),
    )  # fmt: skip
    if change.action == "deleted":
        conn.execute(d.sql("DELETE FROM installations WHERE id = ?"), (change.installation_id,))
    if not change.stops_jobs:
        return []
    reason = f"installation {change.action}"
    queued, running = d.stop_active(conn, "installation_id = ?", (change.installation_id,), reason, JobStatus.CANCELLED)
    return queued + running


ORG_WIDE = "{owner}/*"
"""The repo_labels key of an owner's label (from its `.github` repository)."""


def trigger_label(d: Dialect, conn: Any, repo: str, installation_id: int) -> str | None:
    """The label a repository's config named when a worker last read it, else its owner's, else None; the rows of
    the forge of `installation_id` only (`forge_key`)."""
    key = forge_key(repo, installation_id)
    org_key = forge_key(ORG_WIDE.format(owner=repo.split("/", 1)[0]), installation_id)
    row = conn.execute(
        d.sql("SELECT label FROM repo_labels WHERE repo IN (?, ?) ORDER BY repo = ? DESC LIMIT 1"),
        (key, org_key, key),
    ).fetchone()
    return None if row is None else str(row[0])
