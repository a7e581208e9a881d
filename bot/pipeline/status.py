"""The one status comment per run: posted at the start, edited in place (throttled), then the outcome."""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from bot.github.gateway import GitHubError, GitHubGateway
from bot.jobs import RunInfo
from bot.render import OutcomeText, render

MIN_EDIT_INTERVAL = 5.0  # seconds between progress edits: GitHub's secondary rate limits dislike bursts
EDIT_WAIT = 30.0  # seconds the final edit waits for a progress edit still in flight
log = structlog.get_logger(__name__)


class StatusComment:
    """Posts and edits the run's status comment; progress edits are best effort and never stop a run."""

    def __init__(
        self, gh: GitHubGateway, issue: int, run: RunInfo, clock: Callable[[], float]
    ) -> None:
        self.gh, self.issue, self.run, self.clock = gh, issue, run, clock
        self.comment_id: int | None = None
        self._last_edit = float("-inf")
        self._in_flight: threading.Thread | None = None  # a progress edit: off the agent's critical path

    def start(self) -> None:
        """Post the comment that says the run has started."""
        self.comment_id = self.gh.create_comment(
            self.issue, render("status_comment.md", phase="starting", run=self.run)
        )
        self._last_edit = self.clock()

    def progress(self, *, step: int, limit: int, command: str | None, tokens: int, elapsed: float) -> None:
        """Show the latest step, at most once every MIN_EDIT_INTERVAL seconds, from a thread: the run goes on."""
        now = self.clock()
        if self.comment_id is None or now - self._last_edit < MIN_EDIT_INTERVAL:
            return
        if self._in_flight is not None and self._in_flight.is_alive():
            return  # GitHub is slow: skip this one rather than queue edits
        self._last_edit = now
        info = {
            "step": step,
            "limit": limit,
            "command": command or "(none)",
            "tokens": tokens,
            "elapsed": elapsed,
        }
        body = render("status_comment.md", phase="running", run=self.run, progress=info)
        self._in_flight = threading.Thread(target=self._edit, args=(body,), name="status-edit", daemon=True)
        self._in_flight.start()

    def finish(self, outcome: OutcomeText, links: dict[str, str | None]) -> None:
        """Show the outcome, with links to the PR and the trajectory when there are any."""
        body = render("status_comment.md", phase="done", run=self.run, outcome=outcome, links=links)
        if self._in_flight is not None:  # the outcome must be the comment's last edit
            self._in_flight.join(EDIT_WAIT)
        if self.comment_id is None:
            self.comment_id = self.gh.create_comment(self.issue, body)
        else:
            self._edit(body)

    def close(self, outcome: OutcomeText, links: dict[str, str | None], *, comment: str | None) -> None:
        """The run's last words: the final status, the outcome comment (if any), the closing reaction."""
        try:
            self.finish(outcome, links)
            if comment is not None:
                self.gh.create_comment(self.issue, comment)
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
