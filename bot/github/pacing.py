"""Pacing one installation's writes as GitHub's guidance on secondary rate limits asks, without idle waits.

GitHub: make requests serially, not concurrently, and wait at least a second between requests that create content.
One `WritePacer` per installation lets one write through at a time (a request waiting out a rate limit inside
githubkit's retry keeps the turn, so the others do not run into the same limit). A write that creates content
(a POST: a comment, a reaction, a pull request, a label) starts at least `interval` s after the previous such write
ended; a write that only changes what exists (PATCH, PUT, DELETE: editing the status comment, the PR's body) waits
for no second and is not counted as the previous content write. Nothing waits before an installation's first write,
after reads, or when the previous content write ended a second ago or more. A write that is waiting out its second
does so outside the turn, so an edit can go meanwhile.

No idle waits: a write nobody waits for (`later`: a reaction, the trajectory comment, the answer on the PR) goes at
once when it can, else joins the installation's queue, sent in order by a thread of its own as its second comes;
the job goes on meanwhile. `drain` waits for the queue (the worker's shutdown). Per process: several worker
processes are not coordinated.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import structlog

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
CREATING_METHODS = frozenset({"POST"})  # a new comment, reaction, pull request or label: GitHub's content creation
INTERVAL = 1.0

log = structlog.get_logger(__name__)


def creates_content(method: str) -> bool:
    """Whether a request of `method` creates content (and so is spaced a second from the previous one)."""
    return method.upper() in CREATING_METHODS


class WritePacer:
    """One installation's writes: serial; a content-creating one `interval` s after the previous one ended."""

    def __init__(
        self,
        interval: float = INTERVAL,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = interval
        self._clock, self._sleep = clock, sleep
        self._turn = threading.Lock()  # one write of the installation at a time
        self._last_created: float | None = None  # when the previous content-creating write ended
        self._queue: deque[tuple[bool, Callable[[], None]]] = deque()
        self._state = threading.Condition()  # guards the queue and `_sending`; notified when the queue is empty
        self._sending = False  # a sender thread is working through the queue

    def _left(self) -> float:
        """Seconds before a content-creating write may start (0: now)."""
        if self._last_created is None:
            return 0.0
        return max(0.0, self._last_created + self.interval - self._clock())

    @contextmanager
    def turn(self, creates: bool = True) -> Iterator[None]:
        """Hold the installation's write turn for one request; a content-creating one waits out its second first,
        without holding the turn meanwhile."""
        while True:
            if creates and (wait := self._left()) > 0:
                self._sleep(wait)
            self._turn.acquire()
            if not creates or self._left() <= 0:
                break
            self._turn.release()  # another content write went while this one waited: its second starts again
        try:
            yield
        finally:
            if creates:
                self._last_created = self._clock()
            self._turn.release()

    def later(self, send: Callable[[], None], *, creates: bool = True) -> None:
        """A write nobody waits for: sent now when nothing is queued and it needs no wait, else queued and sent in
        order by the installation's sender thread. Its failure is logged, never raised (the caller has gone on)."""
        with self._state:
            now = not self._queue and not self._sending and (not creates or self._left() <= 0)
            if not now:
                self._queue.append((creates, send))
                if not self._sending:
                    self._sending = True
                    threading.Thread(target=self._send_queued, name="github-writes", daemon=True).start()
        if now:
            self._send(creates, send)

    def _send(self, creates: bool, send: Callable[[], None]) -> None:
        try:
            with self.turn(creates):
                send()
        except Exception as exc:  # a write nobody waits for: its failure is the log's to tell
            log.warning("github_write_failed", error=f"{type(exc).__name__}: {exc}"[:500])

    def _send_queued(self) -> None:
        while True:
            with self._state:
                if not self._queue:
                    self._sending = False
                    self._state.notify_all()
                    return
                creates, send = self._queue.popleft()
            self._send(creates, send)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued write was sent (or `timeout` s); True when none is left."""
        with self._state:
            return self._state.wait_for(lambda: not self._queue and not self._sending, timeout)


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

    def drain(self, timeout: float) -> bool:
        """Wait (at most `timeout` s in all) for every installation's queued writes; True when none is left."""
        deadline = time.monotonic() + timeout
        with self._lock:
            pacers = list(self._by_installation.values())
        return all([pacer.drain(max(0.0, deadline - time.monotonic())) for pacer in pacers])
