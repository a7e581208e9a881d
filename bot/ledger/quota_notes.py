"""What the quota guard (bot/worker/quotas.py) tells the run it lets start, on the run's own thread: why its token
budget is what it is, and the repository's remaining quota for `/agent help`. Here, not in bot/worker, because the
pipeline reads them (bot/worker imports the pipeline, never the reverse)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class RunQuota:
    """The run's quota context: a token budget a quota set (0: none did) and why, and the help reply's lines."""

    token_budget: int = 0
    token_reason: str = ""
    remaining: tuple[str, ...] = ()


NONE = RunQuota()
_RUN: ContextVar[RunQuota | None] = ContextVar("run_quota", default=None)


@contextmanager
def running(quota: RunQuota) -> Iterator[None]:
    """While inside, this thread's run has `quota`."""
    token = _RUN.set(quota)
    try:
        yield
    finally:
        _RUN.reset(token)


def token_budget_reason(tokens: int) -> str:
    """Why a job's token budget of `tokens` ends its run, when a quota set that budget; '' otherwise (read it on
    the run's thread: the attempts' threads do not see it)."""
    quota = _RUN.get() or NONE
    return quota.token_reason if quota.token_budget and quota.token_budget == tokens else ""


def remaining() -> tuple[str, ...]:
    """The repository's remaining quota, one line per quota set ('' when none), for `/agent help`."""
    return (_RUN.get() or NONE).remaining
