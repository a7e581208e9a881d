"""githubkit's failures as GitHubError, with the HTTP status kept behind it; safe to log."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from githubkit.exception import GitHubException, RequestError, RequestFailed

from bot.github.gateway import GitHubError, RateLimited
from bot.github.retry import rate_limit_wait


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn githubkit's failures into a GitHubError that is safe to log (`RateLimited` once retries are spent)."""
    try:
        yield
    except RequestError as exc:  # RequestFailed, or a failure wrapped while minting an installation token
        origin = exc if isinstance(exc, RequestFailed) else exc.exc
        if not isinstance(origin, RequestFailed):
            raise GitHubError(f"{what}: {type(origin).__name__}") from exc
        text = f"{what}: HTTP {origin.response.status_code} {_message(origin)}"
        if (wait := rate_limit_wait(origin)) is not None:  # the retries' bound is spent: the job is deferred
            raise RateLimited(text, wait) from exc
        raise GitHubError(text) from exc
    except GitHubException as exc:
        raise GitHubError(f"{what}: {type(exc).__name__}: {exc}") from exc


def _message(exc: RequestFailed) -> str:
    try:
        data = exc.response.raw_response.json()
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    details = [str(e.get("message", "")) for e in data.get("errors") or [] if isinstance(e, dict)]
    return "; ".join(m for m in [str(data.get("message", "")), *details] if m)


def status_of(exc: GitHubError) -> int | None:
    """The HTTP status behind a GitHubError (also one raised while minting its token), if any."""
    cause = exc.__cause__
    if isinstance(cause, RequestError) and isinstance(cause.exc, RequestFailed):
        cause = cause.exc
    return cause.response.status_code if isinstance(cause, RequestFailed) else None
