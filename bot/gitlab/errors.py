"""python-gitlab's failures as the gateway's errors (`GitHubError`, `RateLimited`): safe to log, never the token."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import requests
import structlog
from gitlab.exceptions import GitlabError

from bot.github.gateway import GitHubError, RateLimited

log = structlog.get_logger(__name__)
T = TypeVar("T")

MAX_RETRIES = 4  # waits of one rate-limited request, after its first try
MAX_WAIT = 300.0  # seconds: a longer wait is not spent holding a job slot; the job is deferred instead
UNSAID_WAIT = 60.0  # a 429 that names no time: a minute, doubling


class GitLabError(GitHubError):
    """A GitLab call failed; `status` is the HTTP status (None when no answer came)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitLabRateLimited(RateLimited, GitLabError):
    """GitLab's rate limit outlasted one request's bounded waits."""

    def __init__(self, message: str, retry_after: float) -> None:
        RateLimited.__init__(self, message, retry_after)
        self.status = 429


class RetryAfter:
    """A requests response hook remembering, per thread, what the last 429 asked (`Retry-After` or
    `RateLimit-Reset`): python-gitlab's errors keep no headers."""

    def __init__(self) -> None:
        self._local = threading.local()

    def hook(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        if response.status_code == 429:
            self._local.value = _wait_of(response.headers)

    def take(self) -> float | None:
        value: float | None = getattr(self._local, "value", None)
        self._local.value = None
        return value


def _wait_of(headers: Any) -> float | None:
    import time

    said = str(headers.get("Retry-After") or "")
    if said.isdigit():
        return float(said)
    reset = str(headers.get("RateLimit-Reset") or "")
    if reset.isdigit():
        return max(1.0, int(reset) - time.time())
    return None


def call(
    what: str,
    fn: Callable[[], T],
    *,
    secret: str,
    waits: RetryAfter,
    sleep: Callable[[float], None],
    max_retries: int = MAX_RETRIES,
    max_wait: float = MAX_WAIT,
) -> T:
    """`fn()` with GitLab's 429s waited out within a bound (then `RateLimited`); other failures as GitLabError whose
    message names `what`, the status and GitLab's message, with `secret` (the token) never in it."""
    retries = 0
    while True:
        waits.take()
        try:
            return fn()
        except GitlabError as exc:
            status = exc.response_code
            text = _clean(f"{what}: HTTP {status} {exc.error_message}", secret)
            if status != 429:
                raise GitLabError(text, status) from None
            wait = waits.take() or UNSAID_WAIT * 2**retries
            if retries >= max_retries or wait > max_wait:
                log.warning("gitlab_rate_limit_bound_spent", what=what, retries=retries, wait_s=wait)
                raise GitLabRateLimited(text, wait) from None
            log.info("gitlab_rate_limited", what=what, retry=retries + 1, wait_s=wait)
            retries += 1
            sleep(wait)
        except requests.RequestException as exc:
            raise GitLabError(_clean(f"{what}: {type(exc).__name__}", secret)) from None


def _clean(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text
