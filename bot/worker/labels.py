"""When the App is installed or gets repositories: create the trigger label where it is missing, gently."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from bot.github.gateway import GitHubError, GitHubGateway
from bot.ledger.contract import Ledger
from bot.pipeline.admit.gate import reader, remember
from bot.pipeline.runconfig import effective_label
from bot.repo_config.load import ConfigError, layout_for, load_repo_config
from bot.settings import Settings
from bot.worker.ledger_hooks import job_hooks

LABEL_COLOR = "5319e7"
LABEL_DESCRIPTION = "Ask mini-fix to propose a fix for this issue as a draft pull request"
PACE_SECONDS = 1.0  # GitHub's secondary rate limits: at least a second between content-creating requests
POLL_SECONDS = 5.0

log = structlog.get_logger(__name__)


class LabelKeeper:
    """Drains the ledger's label chores in the worker (never on the webhook path), one repository at a time."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        github: Callable[[int, str], GitHubGateway],
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings, self.ledger, self.github = settings, ledger, github
        self._sleep, self._clock = sleep, clock
        self._last_create: float | None = None

    def run(self, stop: threading.Event) -> None:
        """Work through the chores until `stop` is set (a worker thread)."""
        while not stop.is_set():
            try:
                self.run_once(stop)
            except Exception:
                log.exception("label chores failed")
            stop.wait(POLL_SECONDS)

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Handle every chore waiting now; returns how many labels were created."""
        created = 0
        while (stop is None or not stop.is_set()) and (chore := self.ledger.take_label_chore()) is not None:
            installation_id, repo = chore
            with structlog.contextvars.bound_contextvars(installation=installation_id, repo=repo):
                try:
                    created += self.ensure_label(installation_id, repo)
                except GitHubError as exc:  # one repository's trouble does not stop the others
                    log.warning("label_not_created", error=str(exc))
        return created

    def ensure_label(self, installation_id: int, repo: str) -> bool:
        """Create the repository's trigger label unless it exists or mini-fix is off there; True when created."""
        gh = self.github(installation_id, repo)
        try:
            read = reader(self.github, installation_id, gh, repo)
            loaded = load_repo_config(repo, read, layout=layout_for(installation_id))
        except ConfigError as exc:
            log.info("label_skipped_invalid_config", source=exc.source)
            return False
        remember(loaded, repo, job_hooks(self.ledger, installation_id).remember_label, layout_for(installation_id))
        label = effective_label(self.settings, loaded.config)
        if not loaded.config.enabled or label.casefold() in {n.casefold() for n in gh.list_labels()}:
            return False
        self._pace()
        gh.create_label(label, LABEL_COLOR, LABEL_DESCRIPTION)
        log.info("label_created", label=label)
        return True

    def _pace(self) -> None:
        if self._last_create is not None:
            wait = PACE_SECONDS - (self._clock() - self._last_create)
            if wait > 0:
                self._sleep(wait)
        self._last_create = self._clock()
