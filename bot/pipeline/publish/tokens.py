"""Installation tokens fresh when git uses them: minted again once the current one is near its expiry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bot.github.gateway import GitToken

MARGIN_SECONDS = 600  # a token this close to its expiry is not used: a clone or push may take minutes


class FreshToken:
    """A callable giving a token valid for at least `margin` more seconds, whatever the run's length."""

    def __init__(
        self, mint: Callable[[], GitToken], *, clock: Callable[[], float] = time.time, margin: float = MARGIN_SECONDS
    ) -> None:
        self._mint, self._clock, self._margin = mint, clock, margin
        self._current: GitToken | None = None
        self._lock = threading.Lock()
        self.minted: list[str] = []  # every token handed out, for redaction

    def __call__(self) -> str:
        """The current token, or a new one when it expires within the margin."""
        with self._lock:
            if self._current is None or self._current.expires_at - self._clock() < self._margin:
                self._current = self._mint()
                self.minted.append(self._current.token)
            return self._current.token
