"""A worker's capacity for attempts and a job's budget over all of them.

`SandboxSlots` bounds the sandboxes (attempts' and verification's) one worker process keeps alive at once, over
all its jobs; `JobBudget` stops every attempt of one job once, together, they have spent the job's tokens or wall
time, or reached a cost or model-second quota's headroom (`quota_notes.bounds`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from bot.jobs import CancelSignal, cancel_reason
from bot.ledger import quota_notes

POLL_SECONDS = 0.5


class SandboxSlots:
    """The worker-wide bound on sandboxes alive at once (0: no bound): attempts and verification checks.

    An attempt (or a check) takes one slot before its container starts and gives it back when the container is
    gone; it never waits for a slot while holding one, so jobs sharing a worker cannot deadlock."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit) if limit > 0 else None

    def try_take(self) -> bool:
        """Take a slot if one is free now."""
        return self._free is None or self._free.acquire(blocking=False)

    def take(self, stop: threading.Event) -> bool:
        """Wait for a slot; False (and none taken) when `stop` is set first."""
        while not stop.is_set():
            if self._free is None or self._free.acquire(timeout=POLL_SECONDS):
                if not stop.is_set():
                    return True
                self.give()  # freed by a stopped holder as the stop came: nothing may start after it
        return False

    def give(self) -> None:
        """Give a slot back."""
        if self._free is not None:
            self._free.release()


class Closable(Protocol):
    """A sandbox, as far as its removal goes (`Sandbox.close`: idempotent, never raises)."""

    def close(self) -> None: ...


class Removals:
    """One job's sandboxes being removed in the background, so the job goes on (diff, verification, push) while
    the engine kills and removes a container it no longer uses; the slot a sandbox held is given back only once it
    is gone. The job calls `wait` before it ends: no container outlives the job that made it."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def remove(self, sandbox: Closable, slots: SandboxSlots | None) -> None:
        """Remove `sandbox` in the background; then give one of `slots` back (None: it held none)."""
        thread = threading.Thread(target=_remove, args=(sandbox, slots), name="sandbox-remove", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def wait(self) -> None:
        """Return once every removal begun so far has ended."""
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()


def remove(sandbox: Closable, slots: SandboxSlots | None, removals: Removals | None) -> None:
    """Remove `sandbox`, in the background with `removals`, else now; then give one of `slots` back (None: it held
    none)."""
    if removals is not None:
        removals.remove(sandbox, slots)
    else:
        _remove(sandbox, slots)


def _remove(sandbox: Closable, slots: SandboxSlots | None) -> None:
    try:
        sandbox.close()
    finally:
        if slots is not None:
            slots.give()


class JobBudget:
    """The job's total over all its attempts: tokens and wall time; once either is spent every attempt stops. A
    cost or model-second quota's headroom (`quota_notes.bounds`, for the run's `model`) bounds the attempts' tokens
    and model-seconds together the same way.

    `stop` is what the attempts watch: set by the job's own cancel flag (`/agent stop`, shutdown) or by the
    budget; `spent` says which budget, '' when none was (`tokens_spent`: the token budget's own). `closing`
    (remove the containers now) is set with it by a stop of the job, not by a spent budget or a quota's bound: that
    one stops the agents at their next step and leaves their containers to them, so that their work so far can
    still be taken out (`keep_partial_work`). The wall time bounds that too: `grace` seconds (of `clock`) after it
    ran out, `closing` is set whatever still runs (an agent stuck in a long command, a take-out that hangs), so a
    job past its wall time still ends."""

    def __init__(
        self,
        *,
        tokens: int,
        seconds: float,
        cancel: threading.Event,
        clock: Callable[[], float] = time.monotonic,
        model: str = "",
        grace: float = 0.0,
    ) -> None:
        self.tokens, self.seconds, self.cancel, self.clock, self.grace = tokens, seconds, cancel, clock, grace
        self.stop, self.closing = CancelSignal(), CancelSignal()
        self.spent = self.tokens_spent = ""
        # what the quota guard set, read on this (the job's) thread: the attempts' threads do not see it
        self._tokens_why = quota_notes.token_budget_reason(tokens)
        self._bounds = quota_notes.bounds(model)
        self._quota_whys = frozenset(filter(None, (self._tokens_why, *(b.reason for b in self._bounds))))
        self._used: dict[int, int] = {}
        self._model_seconds: dict[int, float] = {}
        self._lock = threading.Lock()

    def used(self) -> int:
        """Tokens spent so far over all attempts."""
        with self._lock:
            return sum(self._used.values())

    def count(self, attempt: int, tokens: int) -> None:
        """Record attempt `attempt`'s tokens so far; stop every attempt once the total reaches the budget (or a
        quota's bound)."""
        with self._lock:
            self._used[attempt] = tokens
            total, seconds = sum(self._used.values()), sum(self._model_seconds.values())
        if 0 < self.tokens <= total:
            self._soft(
                self._tokens_why
                or f"the job's token budget over all attempts ({self.tokens:,}, MINIFIX_MAX_TOKENS) was spent"
            )
        self._bound(total, seconds)

    def count_seconds(self, attempt: int, seconds: float) -> None:
        """Record the seconds attempt `attempt`'s model calls took so far; stop every attempt once a quota's bound
        is reached."""
        with self._lock:
            self._model_seconds[attempt] = seconds
            total, spent = sum(self._used.values()), sum(self._model_seconds.values())
        self._bound(total, spent)

    def _bound(self, tokens: int, seconds: float) -> None:
        for bound in self._bounds:
            if bound.reached(tokens, seconds):
                self._soft(bound.reason)
                return

    def _soft(self, why: str) -> None:
        """Stop the agents at their next step, their containers left to them."""
        with self._lock:
            self.tokens_spent = self.tokens_spent or why
        self._spend(why, close=False)

    @property
    def quota_spent(self) -> bool:
        """Whether what stopped the attempts is a quota (one that set this budget, or a cost or model-second
        quota's bound), not MINIFIX_MAX_TOKENS."""
        return self.spent in self._quota_whys

    def _spend(self, why: str, *, close: bool = True) -> None:
        with self._lock:
            self.spent = self.spent or why
        self.halt(why, close=close)

    def halt(self, why: str, *, close: bool = True) -> None:
        """Stop every attempt (`stop`); `close`: remove their containers at once too (`closing`)."""
        if close:
            self.closing.cancel(why)
        self.stop.cancel(why)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """While inside: the job's cancel flag and its wall-time budget reach `stop`."""
        done = threading.Event()
        started = self.clock()

        def watch() -> None:
            why, closes_at = "", 0.0
            while not done.wait(POLL_SECONDS):
                if self.cancel.is_set():  # a stop of the job, also during the grace: the containers go now
                    self.halt(cancel_reason(self.cancel) or "the job was stopped")
                    return
                now = self.clock()
                if not why and 0 < self.seconds <= now - started:
                    why = f"the job's wall time over all attempts ({self.seconds:g} s, MINIFIX_MAX_WALL_TIME) ran out"
                    self._spend(why, close=False)  # the agents stop at their next step; their work is taken out
                    closes_at = now + self.grace
                if why and closes_at <= now:  # what has not ended by now is closed, its work lost
                    self.halt(why)
                    return

        if self.cancel.is_set():
            self.halt(cancel_reason(self.cancel) or "the job was stopped")
        watcher = threading.Thread(target=watch, name="job-budget", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()


class Turns:
    """At most `limit` of one job's attempts at once (0: no bound), started in attempt order.

    Eval's `--attempt-workers K` for a model server that answers one request at a time: attempt k starts only
    after every earlier one has started, and while fewer than K run."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._next, self._running = 1, 0
        self._changed = threading.Condition()

    def take(self, index: int, stop: threading.Event) -> bool:
        """Wait for attempt `index`'s turn; False (and none taken) when `stop` is set first."""
        if self.limit <= 0:
            return not stop.is_set()
        with self._changed:
            while not (index == self._next and self._running < self.limit):
                if stop.is_set():
                    return False
                self._changed.wait(POLL_SECONDS)
            if stop.is_set():
                return False
            self._next, self._running = self._next + 1, self._running + 1
            self._changed.notify_all()
        return True

    def give(self) -> None:
        """An attempt that took its turn has ended."""
        with self._changed:
            if self.limit > 0:
                self._running -= 1
                self._changed.notify_all()
