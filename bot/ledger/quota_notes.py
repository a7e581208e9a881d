"""What the quota guard (bot/worker/quotas.py) tells the run it lets start, on the run's own thread: why its token
budget is what it is, the cost and model-second quotas' headroom it may spend (`bounds`), and the repository's
remaining quota for `/agent help`. Here, not in bot/worker, because the pipeline reads them (bot/worker imports the
pipeline, never the reverse)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

TokenPrice = Callable[[str], float]  # a model's name -> the higher of its per-token prices (0: unknown, self-hosted)


@dataclass(frozen=True)
class Headroom:
    """What is left of one cost or model-second quota at the run's start, in its own measure, and the words that
    name it when the run reaches it."""

    measure: str  # "cost" or "model_seconds"
    room: float
    reason: str


@dataclass(frozen=True)
class Prices:
    """How the ledger prices a run's use (bot/worker/usage.py `Price`): the operator's per-token price (the higher
    of prompt and completion, so a bound on it holds whatever the mix) and per-model-second price; with none set,
    the model's own per-token price (`model`: litellm's, 0 for a self-hosted model)."""

    per_token: float = 0.0
    per_second: float = 0.0
    model: TokenPrice | None = None

    def of(self, model: str) -> tuple[float, float]:
        """(per token, per model-second) for a run of `model`."""
        if self.per_token or self.per_second:
            return self.per_token, self.per_second
        return (max(0.0, self.model(model)) if self.model else 0.0), 0.0


@dataclass(frozen=True)
class Bound:
    """A mid-run bound: the run stops once `per_token * tokens + per_second * model_seconds` reaches `room`."""

    per_token: float
    per_second: float
    room: float
    reason: str

    def reached(self, tokens: int, seconds: float) -> bool:
        return self.per_token * tokens + self.per_second * seconds >= self.room


@dataclass(frozen=True)
class RunQuota:
    """The run's quota context: a token budget a quota set (0: none did) and why, the help reply's lines, and the
    cost and model-second quotas' headroom with the prices that turn its use into cost."""

    token_budget: int = 0
    token_reason: str = ""
    remaining: tuple[str, ...] = ()
    headroom: tuple[Headroom, ...] = ()
    prices: Prices = Prices()


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


def bounds(model: str) -> tuple[Bound, ...]:
    """The mid-run bounds of this thread's run of `model`: one per cost quota (its headroom over the run's tokens
    at the higher per-token price, plus its model-seconds where they are priced) and one per model-second quota.
    A cost quota on a model that costs nothing (self-hosted, no operator price) bounds nothing."""
    quota = _RUN.get() or NONE
    per_token, per_second = quota.prices.of(model) if quota.headroom else (0.0, 0.0)
    found = []
    for left in quota.headroom:
        if left.measure == "model_seconds":
            found.append(Bound(0.0, 1.0, left.room, left.reason))
        elif per_token > 0 or per_second > 0:
            found.append(Bound(per_token, per_second, left.room, left.reason))
    return tuple(found)


def remaining() -> tuple[str, ...]:
    """The repository's remaining quota, one line per quota set ('' when none), for `/agent help`."""
    return (_RUN.get() or NONE).remaining
