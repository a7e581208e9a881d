"""What failed on a `ci` follow-up's commit, read through the API in the worker: failing check runs, their output
and annotations, and for GitHub Actions the end of the failed job's log."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from bot.github.errors import status_of
from bot.github.gateway import CheckRun, GitHubError, GitHubGateway, RateLimited
from bot.pipeline.task.untrusted import plain, quoted

FAILED = frozenset({"failure", "timed_out"})
MAX_RUNS = 3
MAX_ANNOTATIONS = 10
MAX_ANNOTATION_CHARS = 300
MAX_OUTPUT_CHARS = 1_500
MAX_LOG_CHARS = 4_000
LOG_LINES_BEFORE = 80  # the failing step's output comes before its `##[error]` line
LOG_LINES_AFTER = 5
LOG_TAIL_LINES = 200  # a log with no `##[error]` line: its end
ACTIONS = "github-actions"
GITLAB_CI = "gitlab-ci"  # a GitLab CI job's check run (bot/gitlab/gateway.py): its log is the job's trace
_STAMP = re.compile(r"^\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
_ERROR = "##[error]"

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Failure:
    """One failing check run, its texts already quoted for the task."""

    name: str
    conclusion: str
    output: str
    annotations: tuple[str, ...]
    log: str


@dataclass(frozen=True)
class CiEvidence:
    """The failures read, and what could not be read (and why), for the task and the PR."""

    failures: tuple[Failure, ...]
    unread: tuple[str, ...]


def log_tail(text: str) -> str:
    """The part of an Actions log that says what failed: from a little before the first `##[error]` line to just
    after the last; with no such line, the end. Timestamps dropped; the end is kept when it is still too long."""
    lines = [_STAMP.sub("", line) for line in text.splitlines()]
    errors = [i for i, line in enumerate(lines) if _ERROR in line]
    if errors:
        kept = lines[max(0, errors[0] - LOG_LINES_BEFORE) : errors[-1] + LOG_LINES_AFTER + 1]
    else:
        kept = lines[-LOG_TAIL_LINES:]
    tail = "\n".join(kept)[-MAX_LOG_CHARS:]
    skipped = len(lines) - len(kept)
    return f"[… {skipped} lines of the log left out]\n{tail}" if skipped else tail


def read_evidence(gh: GitHubGateway, sha: str, secrets: Sequence[str]) -> CiEvidence:
    """The failing check runs of `sha`; a permission the installation has not granted yet becomes a note. GitHub's
    rate limit on the list itself is raised (`RateLimited`): the job waits it out, nothing is said to be missing."""
    try:
        runs = [r for r in gh.check_runs(sha) if r.conclusion in FAILED]
    except RateLimited:
        raise
    except GitHubError as exc:
        return CiEvidence((), (_why("the check runs", "checks: read", exc),))
    unread: list[str] = []
    failures = tuple(_failure(gh, run, secrets, unread) for run in runs[:MAX_RUNS])
    if len(runs) > MAX_RUNS:
        unread.append(f"{len(runs) - MAX_RUNS} more failing check runs (only the first {MAX_RUNS} are shown)")
    return CiEvidence(failures, tuple(unread))


def _failure(gh: GitHubGateway, run: CheckRun, secrets: Sequence[str], unread: list[str]) -> Failure:
    try:
        annotations = gh.check_annotations(run.id)[:MAX_ANNOTATIONS]
    except GitHubError as exc:
        annotations = []
        unread.append(_why(f"the annotations of `{run.name}`", "checks: read", exc))
    job_log = ""
    if run.app in (ACTIONS, GITLAB_CI):  # an Actions check run's id is its workflow job's id; GitLab's its job's
        try:
            job_log = quoted(log_tail(gh.job_log(run.id)), MAX_LOG_CHARS, secrets)
        except GitHubError as exc:
            unread.append(_why(f"the log of `{run.name}`", "actions: read", exc))
    return Failure(
        _one_line(plain(run.name, secrets)),
        run.conclusion,
        quoted(run.output, MAX_OUTPUT_CHARS, secrets) if run.output.strip() else "",
        tuple(quoted(a, MAX_ANNOTATION_CHARS, secrets) for a in annotations),
        job_log,
    )


def _one_line(text: str) -> str:
    """A check's name for a heading: one line, no backticks, short."""
    return " ".join(text.replace("`", "'").split())[:100] or "(unnamed)"


def _why(what: str, permission: str, exc: GitHubError) -> str:
    status = status_of(exc)
    log.warning("ci_evidence_unread", what=what, status=status, rate_limited=isinstance(exc, RateLimited))
    if isinstance(exc, RateLimited):  # a 403/429 that names a rate limit is GitHub's pacing, never a permission
        return f"{what}: GitHub's rate limit refused the read (it asked to wait {exc.retry_after:.0f} s)"
    if status in (403, 422):  # 422: the installation cannot mint a token with the permission it has not accepted
        return f"{what}: this installation has not granted `{permission}` (accept the App's new permissions)"
    return f"{what}: GitHub answered {status or 'with an error'}"
