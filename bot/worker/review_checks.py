"""The reviews of mini-fix's PRs, checked in the worker: a verdict counts only when its author may write.

The webhook path keeps each review unchecked (`bot/ledger/pr_outcomes.py`); this chore asks GitHub for the
reviewer's permission on the repository through the installation's gateway, and a `write`, `maintain` or `admin`
answer makes the verdict count in `mini-fix jobs`, /runs and the metrics. When GitHub will not say (403, 404 of an
unknown installation, a server error) the review stays uncounted with a log line; a rate limit leaves it unchecked
for a later pass.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from bot.github.gateway import GitHubError, GitHubGateway, RateLimited, can_write
from bot.ledger.contract import Ledger

POLL_SECONDS = 5.0
BATCH = 50  # reviews read from the ledger per pass

log = structlog.get_logger(__name__)


class ReviewChecker:
    """Settles the ledger's unchecked reviews in the worker (never on the webhook path), oldest first."""

    def __init__(self, ledger: Ledger, github: Callable[[int, str], GitHubGateway]) -> None:
        self.ledger, self.github = ledger, github

    def run(self, stop: threading.Event) -> None:
        """Check reviews until `stop` is set (a worker thread)."""
        while not stop.is_set():
            try:
                self.run_once(stop)
            except Exception:
                log.exception("review checks failed")
            stop.wait(POLL_SECONDS)

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Settle the reviews waiting now; returns how many verdicts it counted."""
        counted = 0
        for review in self.ledger.unchecked_reviews(BATCH):
            if stop is not None and stop.is_set():
                break
            about = log.bind(
                installation=review.installation_id, repo=review.repo, pull=review.pull, reviewer=review.by
            )
            try:
                role = self.github(review.installation_id, review.repo).permission(review.by)
            except RateLimited as exc:  # the reviews after it would wait too: they all stay for a later pass
                about.warning("review_check_deferred", retry_after=exc.retry_after)
                break
            except GitHubError as exc:
                about.warning("review_not_counted", reason=f"permission unknown: {exc}")
                self.ledger.settle_review(review, "", counts=False)
                continue
            counts = can_write(role)
            settled = self.ledger.settle_review(review, role, counts=counts)
            about.info("review_counted" if counts else "review_not_counted", role=role, verdict=review.review)
            counted += int(settled and counts)
        return counted
