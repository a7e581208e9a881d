"""When a GitHub request is tried again: githubkit's retry hook, extended to wait out rate limits with a bound.

githubkit retries a rate-limited request once; a burst of writes meets GitHub's secondary limit again at once. Here
a request waits out what GitHub asks (`Retry-After`, or `x-ratelimit-reset` with `x-ratelimit-remaining: 0`; one
minute, doubling, when it says neither) up to `max_retries` times, each wait at most `max_wait` s, so one write
waits minutes, never forever. Past that bound the caller gets the failure (`errors.py` makes it `RateLimited`, and
the job goes back to the queue with GitHub's delay). Server errors keep githubkit's own retry.
"""

from __future__ import annotations

from datetime import timedelta

import structlog
from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed
from githubkit.retry import RETRY_SERVER_ERROR, RetryDecisionFunc, RetryOption

log = structlog.get_logger(__name__)

MAX_RETRIES = 4  # tries after the first, per request
MAX_WAIT = 300.0  # seconds: a longer wait is not spent holding a job slot; the job is deferred instead
UNSAID_WAIT = 60.0  # GitHub's guidance when a limit names no time: at least a minute, growing with each retry
MIN_WAIT = 1.0  # reset times are whole seconds (and githubkit reads a zero wait as "one minute")


def _failed(exc: BaseException) -> RequestFailed | None:
    """The HTTP failure behind `exc`, also one wrapped while minting the installation token."""
    if isinstance(exc, RequestFailed):
        return exc
    if isinstance(exc, RequestError) and isinstance(exc.exc, RequestFailed):
        return exc.exc
    return None


def _says_rate_limit(failed: RequestFailed) -> bool:
    """A 429, or a 403 whose message names a rate limit (GitHub does not always send the headers)."""
    if failed.response.status_code == 429:
        return True
    if failed.response.status_code != 403:
        return False
    try:
        data = failed.response.raw_response.json()
    except ValueError:
        return False
    return isinstance(data, dict) and "rate limit" in str(data.get("message", "")).lower()


def rate_limit_wait(exc: BaseException, retry_count: int = 0) -> float | None:
    """Seconds GitHub asks to wait before `exc`'s request is tried again; None when `exc` is no rate limit."""
    failed = _failed(exc)
    if failed is None:
        return None
    if isinstance(failed, RateLimitExceeded):
        return max(failed.retry_after.total_seconds(), MIN_WAIT)
    if _says_rate_limit(failed):
        return float(UNSAID_WAIT * 2**retry_count)
    return None


class RateLimitRetry:
    """githubkit's `RetryDecisionFunc`: wait out rate limits within the bound; server errors as githubkit does."""

    def __init__(
        self,
        max_retries: int = MAX_RETRIES,
        max_wait: float = MAX_WAIT,
        server_errors: RetryDecisionFunc = RETRY_SERVER_ERROR,
    ) -> None:
        self.max_retries, self.max_wait = max_retries, max_wait
        self._server_errors = server_errors

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        """Whether to try `exc`'s request again, and after how long."""
        wait = rate_limit_wait(exc, retry_count)
        if wait is None:
            return self._server_errors(exc, retry_count)
        request = _failed(exc)
        where = f"{request.request.method} {request.request.url.path}" if request else ""
        if retry_count >= self.max_retries or wait > self.max_wait:
            log.warning("github_rate_limit_bound_spent", request=where, retries=retry_count, wait_s=wait)
            return RetryOption(False)
        log.info("github_rate_limited", request=where, retry=retry_count + 1, wait_s=wait)
        return RetryOption(True, timedelta(seconds=wait))
