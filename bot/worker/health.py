"""A chore that fails again and again (a dead engine, a database away) logs when it starts failing and when it
recovers, one line each, instead of a traceback at every try."""

from __future__ import annotations

from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)


class ChoreHealth:
    """Runs one periodic chore and logs its state changes: failing (with why), failing differently, recovered."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.failing: str | None = None  # the kind of error it keeps failing with; None while it works

    def run(self, chore: Callable[[], None]) -> bool:
        """Run `chore` once; True when it worked. Its errors are logged here, never raised."""
        try:
            chore()
        except Exception as exc:  # the loop's edge: a chore's failure must not end the worker's loop
            self._failed(exc)
            return False
        if self.failing is not None:
            log.info(f"{self.name}_recovered", after=self.failing)
            self.failing = None
        return True

    def _failed(self, exc: Exception) -> None:
        kind = type(exc).__name__
        if kind == self.failing:
            return  # said already; it is still down
        first = self.failing is None
        self.failing = kind
        # A traceback once, for a failure nobody expected (a bug); a known outage is one line.
        log.warning(f"{self.name}_failing", error=f"{kind}: {exc}"[:500], exc_info=first and not _outage(exc))


def _outage(exc: Exception) -> bool:
    """An error that says something outside is down (the engine, the database, the network), not a bug."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return isinstance(exc, OSError) or bool(names & {"SandboxError", "OperationalError", "InterfaceError"})
