"""The one status comment per run: posted at the start, edited in place (throttled), then the outcome."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog

from bot.github.gateway import GitHubError, GitHubGateway
from bot.jobs import RunInfo
from bot.ledger.run_usage import usage_line
from bot.pipeline.publish.events import Said, fold
from bot.pipeline.task.feedback import STATUS_MARKER
from bot.render import OutcomeText, render

MIN_EDIT_INTERVAL = 5.0  # seconds between progress edits: GitHub's secondary rate limits dislike bursts
EDIT_WAIT = 30.0  # seconds the final edit waits for a progress edit still in flight
log = structlog.get_logger(__name__)


class StatusComment:
    """Posts and edits the run's status comment; progress edits are best effort and never stop a run.

    Several attempts of one job report progress from their own threads: each has a row, and one lock keeps the
    rows, the throttle and the edit in flight consistent. What the run learns arrives as events (`say`); every
    render folds them over the run's start (`info`): nothing else writes what the comment shows."""

    def __init__(
        self,
        gh: GitHubGateway,
        issue: int,
        run: RunInfo,
        clock: Callable[[], float],
        *,
        attempts: int = 1,
        job_id: str = "",
    ) -> None:
        self.gh, self.issue, self.clock = gh, issue, clock
        self._start: RunInfo = run.copy()  # the run as it began; what it learns is in `_said`
        self._said: list[Said] = []
        self._said_lock = threading.Lock()  # its own: an edit renders (and folds) with the rows' lock held
        self.attempts, self.job_id = attempts, job_id  # with a job id, an earlier run's comment is taken over
        self.token_budget = 0  # the job's tokens over all attempts (0: not shown)
        self.comment_id: int | None = None
        self._rows: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._last_edit = float("-inf")
        self._in_flight: threading.Thread | None = None  # a progress edit: off the agent's critical path

    def start(self) -> None:
        """Post the comment that says the run has started, or take over the one an earlier run of this job left."""
        # Looked up on every run: a shutdown gives its attempt back, so the ledger's count cannot tell a resumed run.
        self.comment_id = self._earlier() if self.job_id else None
        body = self._render(phase="starting", resumed=self.comment_id is not None)
        if self.comment_id is None:
            self.comment_id = self.gh.create_comment(self.issue, body)
        else:
            self._edit(body)
        self._last_edit = self.clock()

    def _earlier(self) -> int | None:
        """The latest status comment of this job on the issue (its worker was stopped or died), by its markers."""
        marker = job_marker(self.job_id)
        try:
            comments = self.gh.list_comments(self.issue)
        except GitHubError as exc:
            log.warning("status_comment_lookup_failed", error=str(exc))
            return None
        # Only the App's own comments: anyone can paste the markers into a comment of theirs.
        ours = [c.id for c in comments if c.author.endswith("[bot]") and STATUS_MARKER in c.body and marker in c.body]
        return max(ours, default=None)

    def say(self, *events: Said) -> None:
        """What the run learned; the next edit shows it (from any thread)."""
        with self._said_lock:
            self._said.extend(events)

    @property
    def events(self) -> tuple[Said, ...]:
        """Every event so far, in order."""
        with self._said_lock:
            return tuple(self._said)

    def info(self) -> RunInfo:
        """The run as the comment, the PR and the outcome comment show it: the start with every event folded in."""
        return fold(self._start, self.events)

    def _render(self, **values: Any) -> str:
        # the job's own tokens, model seconds and sandbox CPU: so far, or in all on the outcome
        values["usage"] = usage_line(self.job_id, finished=values.get("phase") == "done")
        return render("status_comment.md", run=self.info(), attempts=self.attempts, job_marker=self._marker(), **values)

    def _marker(self) -> str:
        return job_marker(self.job_id) if self.job_id else ""

    def progress(
        self, *, step: int, limit: int, command: str | None, tokens: int, elapsed: float, attempt: int = 1
    ) -> None:
        """Show the latest step of `attempt`, at most once every MIN_EDIT_INTERVAL seconds, from a thread."""
        row = {"step": step, "limit": limit, "command": command or "(none)", "tokens": tokens, "elapsed": elapsed}
        with self._lock:
            self._rows[attempt] = {**self._rows.get(attempt, {}), **row, "attempt": attempt}
            self._edit_soon()

    def ended(self, attempt: int, how: str) -> None:
        """Mark `attempt` as finished (`how`: its exit status, or why it stopped) on the next edit."""
        with self._lock:
            self._rows.setdefault(
                attempt, {"attempt": attempt, "step": 0, "limit": 0, "command": "(none)", "tokens": 0, "elapsed": 0.0}
            )["ended"] = how
            self._edit_soon()

    def _edit_soon(self) -> None:
        """Start an edit from a thread unless one is in flight or the last was too recent (lock held)."""
        now = self.clock()
        if self.comment_id is None or now - self._last_edit < MIN_EDIT_INTERVAL:
            return
        if self._in_flight is not None and self._in_flight.is_alive():
            return  # GitHub is slow: skip this one rather than queue edits
        self._last_edit = now
        rows = [self._rows[k] for k in sorted(self._rows)]
        total = sum(int(r["tokens"]) for r in rows)
        body = self._render(phase="running", progress=rows, total={"tokens": total, "budget": self.token_budget})
        self._in_flight = threading.Thread(target=self._edit, args=(body,), name="status-edit", daemon=True)
        self._in_flight.start()

    def finish(self, outcome: OutcomeText, links: dict[str, str | None]) -> None:
        """Show the outcome, with links to the PR and the trajectory when there are any."""
        body = self._render(phase="done", outcome=outcome, links=links)
        with self._lock:
            self._last_edit = float("inf")  # no progress edit may follow the outcome
            in_flight = self._in_flight
        if in_flight is not None:  # the outcome must be the comment's last edit
            in_flight.join(EDIT_WAIT)
        if self.comment_id is None:
            self.comment_id = self.gh.create_comment(self.issue, body)
        else:
            self._edit(body)

    def close_earlier(self, outcome: OutcomeText) -> None:
        """Show `outcome` on the comment an earlier run of this job left (none: nothing to say there)."""
        self.comment_id = self._earlier() if self.job_id else None
        if self.comment_id is not None:
            self._edit(self._render(phase="done", outcome=outcome, links={"pr": None, "run": None}))
            log.info("earlier_status_comment_closed", comment_id=self.comment_id)

    def close(self, outcome: OutcomeText, links: dict[str, str | None], *, comment: str | None) -> None:
        """The run's last words: the final status, the outcome comment (if any), the closing reaction."""
        try:
            self.finish(outcome, links)
            if comment is not None:
                self.gh.post_comment(self.issue, comment)  # in the installation's write order; the run goes on
            if outcome.reaction:
                self.gh.add_reaction(self.issue, outcome.reaction)
        except GitHubError as exc:
            log.warning("outcome_report_failed", error=str(exc))

    def _edit(self, body: str) -> None:
        assert self.comment_id is not None
        try:
            self.gh.update_comment(self.comment_id, body)
        except GitHubError as exc:
            log.warning("status_comment_edit_failed", error=str(exc))


def job_marker(job_id: str) -> str:
    """The hidden line that ties a status comment to its job, so a resumed run edits it instead of posting another."""
    return f"<!-- mini-fix:job {job_id} -->"
