"""Token and cost quotas per organisation: a run that would start past one is refused, and the issue says which
quota, how much was used and when it resets.

The operator sets defaults (MINIFIX_QUOTA_TOKENS_PER_DAY/_MONTH, MINIFIX_QUOTA_COST_PER_DAY/_MONTH) and per-owner
overrides (MINIFIX_QUOTA_OVERRIDES); use is what the ledger's usage rows hold for the installation since the window
began (UTC day, UTC calendar month), follow-ups and retries included. The check runs when a run is claimed, before
anything of it starts; a token quota's headroom then lowers the run's token budget, so a run that would cross it
stops as at its budget's end. A cost quota is only checked at the start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog

from bot.github.gateway import GitHubError, GitHubGateway
from bot.jobs import Job, JobOutcome, JobStatus
from bot.settings import Settings

Runner = Callable[[Job, threading.Event], JobOutcome]
Used = Callable[[int, str], tuple[int, float]]  # (installation id, first UTC day) -> (tokens, cost) used since
MEASURES = ("tokens", "cost")
WINDOWS = ("day", "month")
_TOKENS_LEFT: ContextVar[int | None] = ContextVar("quota_tokens_left", default=None)
REFUSED = "quota_exceeded"
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Quota:
    """One quota an installation has reached."""

    name: str  # "tokens per day", "cost per month", ...
    limit: float
    used: float
    resets_at: datetime

    def sentence(self) -> str:
        """The quota, its use and its reset, in words."""
        limit, used = (
            (f"{self.limit:,.0f}", f"{self.used:,.0f}")
            if self.name.startswith("tokens")
            else (f"{self.limit:,.2f}", f"{self.used:,.2f}")
        )
        return (
            f"this organisation's quota of {limit} {self.name} is used up ({used} used); "
            f"it resets at {self.resets_at:%Y-%m-%d %H:%M} UTC"
        )


def limits(settings: Settings, owner: str) -> dict[str, float]:
    """The owner's quotas by `<measure>_per_<window>`: the operator's defaults, replaced by its override where one is
    set (0 = none)."""
    found: dict[str, float] = {
        f"{measure}_per_{window}": float(getattr(settings, f"quota_{measure}_per_{window}"))
        for measure in MEASURES
        for window in WINDOWS
    }
    override = {k.lower(): v for k, v in settings.quota_overrides.items()}.get(owner.lower(), {})
    for key in found:
        if (value := override.get(key)) is not None:
            found[key] = float(value)
    return found


def windows(now: datetime) -> dict[str, tuple[datetime, datetime]]:
    """Each window's first instant and its reset (the next one's first instant), UTC."""
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    month = day.replace(day=1)
    next_month = (month + timedelta(days=32)).replace(day=1)
    return {"day": (day, day + timedelta(days=1)), "month": (month, next_month)}


@dataclass(frozen=True)
class Check:
    """What the quotas say of a run about to start: the quota it is past, else the tokens it may still use."""

    past: Quota | None = None
    tokens_left: int | None = None  # the tightest token quota's headroom; None = no token quota


def check(settings: Settings, used: Used, job: Job, now: datetime | None = None) -> Check:
    """The first quota the job's installation has used up, if any, else its token headroom (the ledger is read only
    for windows that have a quota)."""
    quotas = limits(settings, job.repo.split("/", 1)[0])
    left: int | None = None
    for window, (start, reset) in windows(now or datetime.now(UTC)).items():
        set_here = {m: quotas[f"{m}_per_{window}"] for m in MEASURES if quotas[f"{m}_per_{window}"] > 0}
        if not set_here:
            continue
        spent = dict(zip(MEASURES, used(job.installation_id, start.strftime("%Y-%m-%d")), strict=True))
        for measure, limit in set_here.items():
            if spent[measure] >= limit:
                return Check(Quota(f"{measure} per {window}", limit, spent[measure], reset))
        if "tokens" in set_here:
            room = int(set_here["tokens"] - spent["tokens"])
            left = room if left is None else min(left, room)
    return Check(tokens_left=left)


def reached(settings: Settings, used: Used, job: Job, now: datetime | None = None) -> Quota | None:
    """The first quota the job's installation has used up, if any."""
    return check(settings, used, job, now).past


def tokens_left() -> int | None:
    """The token headroom of the run this thread runs (set by `guarded`); None when no token quota applies."""
    return _TOKENS_LEFT.get()


def within_quota(settings: Settings) -> Settings:
    """`settings` for the run this thread runs: its job's token budget (MINIFIX_MAX_TOKENS, the total over its
    attempts) lowered to the quota's headroom, so a run that would cross the quota stops as at its budget's end
    (partial work kept as a `[WIP]` draft where the repository keeps it)."""
    left = tokens_left()
    if left is None or left >= settings.max_tokens:
        return settings
    return settings.model_copy(update={"max_tokens": max(1, left)})


def guarded(runner: Runner, settings: Settings, used: Used, github: Callable[[int, str], GitHubGateway]) -> Runner:
    """`runner`, except that a run whose installation used up a quota is refused with a comment on its issue, and
    one that may start runs with its token headroom known (`within_quota`)."""

    def run(job: Job, cancel: threading.Event) -> JobOutcome:
        if job.kind.is_control:
            return runner(job, cancel)
        found = check(settings, used, job)
        if (quota := found.past) is None:
            token = _TOKENS_LEFT.set(found.tokens_left)
            try:
                return runner(job, cancel)
            finally:
                _TOKENS_LEFT.reset(token)
        log.info("job_refused_quota", quota=quota.name, limit=quota.limit, used=quota.used)
        body = (
            f"mini-fix did not start on this: {quota.sentence()}. Nothing was run. Ask again with "
            f"`/agent retry` or the label after the reset, or ask the App's operator to raise the quota."
        )
        try:
            github(job.installation_id, job.repo).create_comment(job.issue, body)
        except GitHubError as exc:
            log.warning("quota_comment_failed", error=str(exc))
        return JobOutcome(JobStatus.CANCELLED, error=f"{REFUSED}: {quota.sentence()}")

    return run
