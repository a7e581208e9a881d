"""A Docker engine that stops answering for a while (dockerd restarted, its socket briefly gone: ~30 s) is waited
out, within a bound, when a sandbox is created and started; anything else fails at once.

Transient: no engine answers (`EngineUnavailable`: the SDK's connection errors) or the engine answered 5xx (an
`APIError` server error, e.g. "500 Server Error ... connection refused" while containerd comes back). Not: an image
that is missing (the worker ensures it again), a request the engine refused (4xx: a bad limit, a name taken).
Each try starts from nothing: `DockerSandbox.start` removes what it created when it fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import structlog
from docker.errors import APIError
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from sandbox.base import EngineUnavailable, ImageMissing, SandboxError

T = TypeVar("T")
TRIES = 10  # the first and 9 more: waits 1, 2, 4, 8, 8, ... = 55 s in all
MAX_WAIT = 8.0  # seconds between two tries at most
WITHIN = 60.0  # seconds from the first try after which no try starts (the job's own time keeps running)

log = structlog.get_logger(__name__)


def transient(exc: BaseException) -> bool:
    """Whether `exc` says the engine is away for now (worth another try), not that the request was wrong."""
    if isinstance(exc, ImageMissing):
        return False
    if isinstance(exc, EngineUnavailable):
        return True
    cause = exc.__cause__ if isinstance(exc, SandboxError) else exc
    return isinstance(cause, APIError) and cause.is_server_error()


def _nap(seconds: float) -> None:
    time.sleep(seconds)  # looked up at each call: tests put a recorder in its place


def with_engine_retry(
    call: Callable[[], T], *, what: str, sleep: Callable[[float], None] = _nap, within: float = WITHIN
) -> T:
    """`call()`, tried again while the engine is away (bounded by TRIES and `within` seconds); its last error
    raised when the engine does not come back, any other error at once."""

    def told(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("sandbox.engine_retry", what=what, attempt=state.attempt_number, retry_in_s=wait, error=str(error))

    retrying = Retrying(
        retry=retry_if_exception(transient),
        stop=stop_after_attempt(TRIES) | stop_after_delay(within),
        wait=wait_exponential(multiplier=1, min=1, max=MAX_WAIT),
        sleep=sleep,
        before_sleep=told,
        reraise=True,
    )
    return retrying(call)
