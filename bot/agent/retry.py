"""When a failed model call is tried again: after the server's `Retry-After`, else a doubling wait; never past the
run's wall budget."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass

from tenacity import RetryCallState

from bot.agent.model_base import seconds_left

BACKOFF_CEILING = 60.0
"""The longest wait of our own between two tries."""
RETRY_AFTER_CEILING = 600.0
"""A server asking for a longer wait than this is not waited for, whatever the run has left."""


def retry_after(error: BaseException | None) -> float | None:
    """Seconds the server asked us to wait before the next try (`Retry-After`: seconds or an HTTP date), or None."""
    value = _header(error, "retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # a header we cannot read is no request at all: our own backoff applies
    return max(0.0, when.timestamp() - time.time())


def _header(error: BaseException | None, name: str) -> str | None:
    # litellm copies the response's headers onto its exception; its `.response` is often a bare stand-in.
    headers: Mapping[str, str] = getattr(error, "litellm_response_headers", None) or {}
    if not headers:
        response = getattr(error, "response", None)
        headers = getattr(response, "headers", None) or {}
    return next((str(v) for k, v in headers.items() if str(k).lower() == name), None)


@dataclass
class RetryPolicy:
    """tenacity's wait and stop for one model call; `gave_up` says why the tries ended, for the error message."""

    attempts: int
    first_wait: float
    gave_up: str = ""

    def wait(self, state: RetryCallState) -> float:
        """The server's `Retry-After` when it sent one, else our doubling wait."""
        asked = retry_after(state.outcome.exception() if state.outcome else None)
        if asked is not None:
            return asked
        return float(min(BACKOFF_CEILING, self.first_wait * 2 ** (state.attempt_number - 1)))

    def stop(self, state: RetryCallState) -> bool:
        """Stop after the last try, or when the next wait would outlast the run's wall budget or our ceiling."""
        upcoming = state.upcoming_sleep
        tries = f"{state.attempt_number} tr{'y' if state.attempt_number == 1 else 'ies'}"
        asked = " (the server's Retry-After)" if self._asked(state) else ""
        left = seconds_left()
        if state.attempt_number >= self.attempts:
            self.gave_up = f"after {tries}"
        elif left is not None and upcoming > left:
            self.gave_up = (
                f"after {tries}: the next wait, {upcoming:.0f} s{asked}, is longer than the {left:.0f} s "
                "left of the run's wall time"
            )
        elif upcoming > RETRY_AFTER_CEILING:
            ceiling = RETRY_AFTER_CEILING
            self.gave_up = f"after {tries}: the next wait, {upcoming:.0f} s{asked}, is over {ceiling:.0f} s"
        return bool(self.gave_up)

    @staticmethod
    def _asked(state: RetryCallState) -> bool:
        return retry_after(state.outcome.exception() if state.outcome else None) is not None
