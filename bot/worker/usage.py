"""A run's use, metered on the host: the model's tokens and seconds per call (from the model server's answer),
the sandboxes' CPU-seconds (from the engine, when each sandbox closes) and the run's wall time.

The worker opens one `JobMeter` per claim of a run (`metering`); the runner wraps the run's model and sandbox
factories with it (`active`). Every model call writes the claim's running totals to the ledger without waiting
(bot/ledger/usage.py: a newer version replaces an older one, a final row nothing), so a worker killed mid-run has
recorded every call it finished; the run's end writes the final row and waits for it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import structlog

from bot import metrics
from bot.agent.config import ModelConfig
from bot.agent.model_base import Model, ModelReply
from bot.jobs import Job
from bot.ledger import run_usage
from bot.ledger.usage import Usage, day_of
from bot.settings import Settings
from sandbox.base import DelegatingSandbox, Sandbox, SandboxConfig

Write = Callable[[Usage], "Future[bool]"]
FINAL_WAIT_SECONDS = 30.0
_ACTIVE: ContextVar[JobMeter | None] = ContextVar("job_meter", default=None)
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Price:
    """The operator's prices (MINIFIX_PRICE_*); all 0: the model's own price (litellm's, for a hosted model)."""

    per_million_prompt: float = 0.0
    per_million_completion: float = 0.0
    per_model_second: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Price:
        return cls(
            settings.price_per_million_prompt_tokens,
            settings.price_per_million_completion_tokens,
            settings.price_per_model_second,
        )

    def of(self, reply: ModelReply, seconds: float) -> float:
        """One call's cost."""
        if not (self.per_million_prompt or self.per_million_completion or self.per_model_second):
            return max(0.0, reply.cost)
        tokens = reply.prompt_tokens * self.per_million_prompt + reply.completion_tokens * self.per_million_completion
        return tokens / 1e6 + seconds * self.per_model_second


class JobMeter:
    """One claim's totals; safe to add to from the attempts' threads at once."""

    def __init__(self, job: Job, write: Write, price: Price | None = None) -> None:
        self._write, self._price = write, price or Price()
        self._lock = threading.Lock()
        self._inst = str(job.installation_id)
        self.use = Usage(
            job.id, uuid.uuid4().hex[:16], job.attempts, job.installation_id, job.repo, day_of(time.time())
        )
        run_usage.register(job.id, lambda: self.use)  # the status comment's "used so far" line

    def add_call(self, reply: ModelReply, seconds: float) -> None:
        """One model call's tokens and seconds."""
        with self._lock:
            use = self.use = replace(
                self.use,
                version=self.use.version + 1,
                calls=self.use.calls + 1,
                prompt_tokens=self.use.prompt_tokens + reply.prompt_tokens,
                completion_tokens=self.use.completion_tokens + reply.completion_tokens,
                model_seconds=self.use.model_seconds + seconds,
                cost=self.use.cost + (cost := self._price.of(reply, seconds)),
            )
        metrics.count_usage(self._inst, reply.prompt_tokens, reply.completion_tokens, seconds, cost=cost)
        self._send(use)

    def add_cpu(self, seconds: float) -> None:
        """A closed sandbox's CPU-seconds (written with the next call or the final row)."""
        with self._lock:
            self.use = replace(self.use, sandbox_cpu_seconds=self.use.sandbox_cpu_seconds + seconds)
        metrics.count_usage(self._inst, cpu_seconds=seconds)

    def finish(self, wall_seconds: float) -> Usage:
        """The run ended: the final row, with its wall time, written and waited for."""
        with self._lock:
            use = self.use = replace(self.use, version=self.use.version + 1, final=True, wall_seconds=wall_seconds)
        run_usage.forget(use.job_id)
        metrics.count_usage(self._inst, wall_seconds=wall_seconds)
        try:
            self._write(use).result(FINAL_WAIT_SECONDS)
        except Exception:  # the run's outcome matters more than its bill; the last running totals stay recorded
            log.warning("usage_not_recorded", job_id=use.job_id, exc_info=True)
        return use

    def _send(self, use: Usage) -> None:
        try:
            self._write(use).add_done_callback(_logged)
        except Exception:
            log.warning("usage_not_recorded", job_id=use.job_id, exc_info=True)

    def models(self, factory: Callable[[ModelConfig], Model]) -> Callable[[ModelConfig], Model]:
        """`factory`, its models metered."""
        return lambda config: MeteredModel(factory(config), self)

    def sandboxes(self, factory: Callable[[SandboxConfig, str], Sandbox]) -> Callable[[SandboxConfig, str], Sandbox]:
        """`factory`, its sandboxes' CPU-seconds metered when they close."""
        return lambda config, run_id: MeteredSandbox(factory(config, run_id), self)


def _logged(future: Future[bool]) -> None:
    if (error := future.exception()) is not None:
        log.warning("usage_not_recorded", error=str(error))


@contextmanager
def metering(meter: JobMeter | None) -> Iterator[JobMeter | None]:
    """While inside, `active()` is `meter` on this thread (the slot running the job)."""
    token = _ACTIVE.set(meter)
    try:
        yield meter
    finally:
        _ACTIVE.reset(token)


def active() -> JobMeter | None:
    """The meter of the run this thread is running, if a worker opened one."""
    return _ACTIVE.get()


class MeteredModel:
    """A model whose every answered call is added to the meter."""

    def __init__(self, inner: Model, meter: JobMeter) -> None:
        self.inner, self.meter, self.name = inner, meter, inner.name

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """The inner model's reply, metered."""
        began = time.monotonic()
        reply = self.inner.query(messages)
        self.meter.add_call(reply, time.monotonic() - began)
        return reply

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class MeteredSandbox(DelegatingSandbox):
    """A sandbox whose CPU-seconds, as the engine counts them, are added to the meter when it closes."""

    def __init__(self, inner: Sandbox, meter: JobMeter) -> None:
        super().__init__(inner)
        self.meter = meter
        self._metered = threading.Event()

    def close(self) -> None:
        """Read the container's CPU time once, then close it."""
        if not self._metered.is_set():
            self._metered.set()
            read = getattr(self.inner, "cpu_seconds", None)
            seconds = read() if callable(read) else None
            if seconds:
                self.meter.add_cpu(float(seconds))
        self.inner.close()
