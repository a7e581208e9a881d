"""The ledger reads the webhook path makes, cached for a few seconds so a burst does not block the event loop.

A repository's trigger label and an installation's state change rarely (a worker reads a config, an installation
is suspended). Serving them from memory keeps synchronous SQLite reads off the hot path; an installation event
seen by this process drops the cache at once, and other processes' changes show up within `ttl` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from bot.forge_ids import is_gitlab
from bot.jobs import JobStatus

K = TypeVar("K")
V = TypeVar("V")


class LedgerReads(Protocol):
    """The reads `guards` needs from the ledger."""

    def trigger_label(self, repo: str, *, installation_id: int) -> str | None: ...

    def installation_active(self, installation_id: int) -> bool: ...

    def count_jobs(
        self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None
    ) -> int: ...


class _TTLCache(dict[K, tuple[float, V]]):
    def get_or_load(self, key: K, load: Callable[[K], V], ttl: float, now: float) -> V:
        hit = self.get(key)
        if hit is not None and now - hit[0] < ttl:
            return hit[1]
        value = load(key)
        self[key] = (now, value)
        return value


class CachedReads:
    """`LedgerReads` over a ledger, with the label and installation reads cached for `ttl` seconds."""

    def __init__(self, ledger: LedgerReads, ttl: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ledger, self._ttl, self._clock = ledger, ttl, clock
        self._labels: _TTLCache[tuple[str, bool], str | None] = _TTLCache()  # by (repo, on GitLab)
        self._installations: _TTLCache[int, bool] = _TTLCache()
        self._lock = threading.Lock()

    def trigger_label(self, repo: str, *, installation_id: int) -> str | None:
        def load(key: tuple[str, bool]) -> str | None:
            return self._ledger.trigger_label(repo, installation_id=installation_id)

        with self._lock:  # the same path on the other forge is another repository
            return self._labels.get_or_load((repo, is_gitlab(installation_id)), load, self._ttl, self._clock())

    def installation_active(self, installation_id: int) -> bool:
        with self._lock:
            return self._installations.get_or_load(
                installation_id, self._ledger.installation_active, self._ttl, self._clock()
            )

    def count_jobs(self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None) -> int:
        return self._ledger.count_jobs(installation_id, status, other_than=other_than)  # a cap must be exact

    def forget(self) -> None:
        """Drop everything (an installation event changed what the ledger says)."""
        with self._lock:
            self._labels.clear()
            self._installations.clear()
