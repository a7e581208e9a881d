"""Pacing one installation's content-creating requests, as GitHub's guidance on secondary rate limits asks.

GitHub: make requests serially, not concurrently, and wait at least a second between POST, PATCH, PUT or DELETE
requests. One `WritePacer` per installation lets one such request through at a time (a request waiting out a rate
limit inside githubkit's retry keeps the turn, so the others do not run into the same limit), each starting at
least `interval` s after the previous one ended. Per process: several worker processes are not coordinated.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
INTERVAL = 1.0


class WritePacer:
    """One installation's writes: serial, `interval` s from the end of one to the start of the next."""

    def __init__(
        self,
        interval: float = INTERVAL,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = interval
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._last_end: float | None = None

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the installation's write turn for one request, after waiting out the interval."""
        with self._lock:
            if self._last_end is not None and (wait := self._last_end + self.interval - self._clock()) > 0:
                self._sleep(wait)
            try:
                yield
            finally:
                self._last_end = self._clock()


class Pacers:
    """The pacer of each installation, made on first use by `make`; one per process (`GitHubApp`)."""

    def __init__(self, make: Callable[[], WritePacer] = WritePacer) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._by_installation: dict[int, WritePacer] = {}

    def of(self, installation_id: int) -> WritePacer:
        """The pacer of `installation_id`."""
        with self._lock:
            if installation_id not in self._by_installation:
                self._by_installation[installation_id] = self._make()
            return self._by_installation[installation_id]
