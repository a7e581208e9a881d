"""A job's ledger hooks (what `/agent stop`, label reads and asks in the pipeline reach) stay on the job's forge."""

from __future__ import annotations

from pathlib import Path

from bot.forge_ids import installation_of
from bot.jobs import JobKind, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.worker.ledger_hooks import job_hooks

REPO = "acme/app"
GH, GL = 77, installation_of(REPO)


def test_a_gitlab_stop_never_reaches_the_same_paths_github_run(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "l.db")
    try:
        github = ledger.submit(JobRequest(JobKind.FIX, GH, REPO, 5, "alice", "gh")).job
        gitlab = ledger.submit(JobRequest(JobKind.FIX, GL, REPO, 5, "dev", "gl")).job
        ask = ledger.submit(JobRequest(JobKind.REVIEW, GL, REPO, 5, "dev", "gl-review")).job
        gl_hooks, gh_hooks = job_hooks(ledger, GL), job_hooks(ledger, GH)
        assert gl_hooks.issue_jobs is not None and gl_hooks.asks is not None and gl_hooks.remember_label is not None
        assert [j.id for j in gl_hooks.issue_jobs(REPO, 5)] == [gitlab.id, ask.id]
        assert [j.id for j in gl_hooks.asks.waiting(REPO, 5)] == [ask.id]
        gl_hooks.remember_label(REPO, "gl-fix")
        assert ledger.trigger_label(REPO, installation_id=GH) is None
        assert gl_hooks.stop_runs is not None and gh_hooks.stop_runs is not None
        assert {j.id for j in gl_hooks.stop_runs(REPO, 5, "/agent stop by @dev")} == {gitlab.id, ask.id}
        assert ledger.get(github.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
        assert [j.id for j in gh_hooks.stop_runs(REPO, 5, "/agent stop by @alice")] == [github.id]
    finally:
        ledger.close()


def test_a_worker_without_a_ledger_has_no_hooks() -> None:
    hooks = job_hooks(None, GL)
    assert (hooks.stop_runs, hooks.remember_label, hooks.issue_jobs, hooks.asks) == (None, None, None, None)
