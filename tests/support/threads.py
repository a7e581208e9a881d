"""Run one piece of test code on several threads at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any


def run_in_threads(target: Callable[..., object], args: Iterable[tuple[Any, ...]]) -> None:
    """Start one thread per argument tuple, then wait for all of them."""
    threads = [threading.Thread(target=target, args=a) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
