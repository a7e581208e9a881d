"""A running job's own use so far, as one line for its status comment (tokens, model seconds, sandbox CPU-seconds).

The worker's meter (bot/worker/usage.py) registers each claim here by job id, so the status comment finds it from
any thread (the attempts report progress from their own)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from bot.ledger.usage import Usage

_LIVE: dict[str, Callable[[], Usage]] = {}
_LOCK = threading.Lock()


def register(job_id: str, current: Callable[[], Usage]) -> None:
    """The job's totals are `current()` until `forget`."""
    with _LOCK:
        _LIVE[job_id] = current


def forget(job_id: str) -> None:
    with _LOCK:
        _LIVE.pop(job_id, None)


def usage_line(job_id: str, *, finished: bool = False) -> str:
    """`Used so far: 12,345 tokens · 38 s of model time · 12 s of sandbox CPU` (`Used:` once the run has finished);
    '' when the job is not metered."""
    with _LOCK:
        current = _LIVE.get(job_id)
    if current is None:
        return ""
    use = current()
    return (
        f"{'Used' if finished else 'Used so far'}: {use.tokens:,} tokens · {use.model_seconds:,.0f} s of model time · "
        f"{use.sandbox_cpu_seconds:,.0f} s of sandbox CPU"
    )
