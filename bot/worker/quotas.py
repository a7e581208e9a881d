"""Quotas per organisation: a run that would start past one is refused, or waits for its window
(MINIFIX_QUOTA_WHEN_REACHED), and the issue says which quota, how much was used and when it resets.

The operator sets defaults (MINIFIX_QUOTA_{TOKENS,COST,MODEL_SECONDS}_PER_{DAY,MONTH}, MINIFIX_QUOTA_FOLLOWUPS_PER_PR
and _PER_DAY) and per-owner overrides (MINIFIX_QUOTA_OVERRIDES: `acme` a GitHub owner, `gitlab:acme` a GitLab group,
two spenders however alike their names, `quota_owner`); the repository's and its organisation's
`.github/mini-fix.yml` may only lower them (bot/repo_config/quotas.py). Use is what the ledger's usage rows hold for
the installation since the window began (UTC day, UTC calendar month), follow-ups and retries included; follow-ups
are counted from the ledger's jobs (bot/ledger/followups.py). The check runs when a run is claimed, before anything
of it starts. A run that starts may spend the headroom of each quota, and no more: a token quota's headroom lowers
the run's token budget; a cost quota's becomes a bound on its tokens at the higher of the two per-token prices the
ledger's accounting uses (MINIFIX_PRICE_PER_MILLION_*, else litellm's price of the run's model: a self-hosted model
at price 0 has no cost bound), plus its model-seconds at MINIFIX_PRICE_PER_MODEL_SECOND where that is set; a
model-second quota's headroom bounds the seconds the run's attempts wait for their model calls (bot/pipeline/capacity.py
`JobBudget`, `quota_notes.bounds`). The first of these a run reaches, the tightest, stops it as at its token
budget's end (the agents at their next step), with the outcome `quota` and a stop message naming that quota, its
use and reset (partial work kept as a `[WIP]` draft where configured). The bounds count the attempts' model calls
after each one, as the token budget does: a run ends within one call of each attempt past them.

A waiting run goes back to the queue claimable at the reset (`JobOutcome.retry_in`: the ledger's `defer`, so the
fair pick skips it until then, no polling); its issue gets one comment per quota it waits on. A wait spends no claim
(`claim_spent=False`: nothing of the run started), so a run may wait through any number of windows without
reaching MINIFIX_MAX_CLAIMS.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import chain

import structlog
from prometheus_client import Gauge

from bot.forge_ids import forge_key
from bot.github.gateway import GitHubError, GitHubGateway
from bot.jobs import Job, JobKind, JobOutcome, JobStatus
from bot.ledger import quota_notes
from bot.repo_config import quotas as repo_quotas
from bot.settings import Settings

Runner = Callable[[Job, threading.Event], JobOutcome]
Used = Callable[[int, str], tuple[float, ...]]  # (installation, first UTC day) -> (tokens, cost, model seconds) since
Followups = Callable[[Job, "float | None"], int]  # (job, since epoch; None: its PR's, ever) -> follow-ups started
Asked = Callable[[Job], Mapping[str, float]]  # the repository's and organisation's own (lower) quotas
MEASURES = ("tokens", "cost", "model_seconds")
WINDOWS = ("day", "month")
FOLLOWUP_KEYS = ("followups_per_pr", "followups_per_day")
KEYS = (*(f"{m}_per_{w}" for m in MEASURES for w in WINDOWS), *FOLLOWUP_KEYS)
FOLLOWUP_KINDS = (JobKind.CI, JobKind.REVIEW)
_TOKENS_LEFT: ContextVar[int | None] = ContextVar("quota_tokens_left", default=None)
REFUSED = "quota_exceeded"
WAITING = "quota_wait"
WAIT_MARGIN_SECONDS = 1.0  # claimable just after the reset, never just before it
log = structlog.get_logger(__name__)
HEADROOM = Gauge(
    "minifix_quota_headroom_ratio",
    "Share of a quota an installation has left (1 = unused, 0 = used up), as the last run checked it.",
    ["installation", "quota"],
)


@dataclass(frozen=True)
class Quota:
    """One quota an installation has reached (or, for the help reply, has set)."""

    name: str  # "tokens per day", "cost per month", "model-seconds per day", "follow-ups per PR", ...
    limit: float
    used: float
    resets_at: datetime | None  # None: never (a PR's follow-ups)

    def amount(self, value: float) -> str:
        if self.name.startswith("cost"):
            return f"{value:,.2f}"
        # whole tokens and seconds; a fraction of a second left is said as one ("its last 0.2 model-seconds")
        return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.1f}"

    def reset_words(self) -> str:
        return "it never resets" if self.resets_at is None else f"it resets at {self.resets_at:%Y-%m-%d %H:%M} UTC"

    def sentence(self) -> str:
        """The quota, its use and its reset, in words."""
        return (
            f"this organisation's quota of {self.amount(self.limit)} {self.name} is used up "
            f"({self.amount(self.used)} used); {self.reset_words()}"
        )

    def left(self) -> str:
        """What is left of it, in words (the `/agent help` reply)."""
        room = max(0.0, self.limit - self.used)
        return f"{self.name}: {self.amount(room)} of {self.amount(self.limit)} left ({self.reset_words()})"


def _label(key: str) -> str:
    measure, _, window = key.rpartition("_per_")
    measure = {"model_seconds": "model-seconds", "followups": "follow-ups"}.get(measure, measure)
    return f"{measure} per {'PR' if window == 'pr' else window}"


def quota_owner(job: Job) -> str:
    """Whose quotas apply to `job`: its repository's owner as MINIFIX_QUOTA_OVERRIDES names it, `acme` for a GitHub
    owner and `gitlab:acme` for a GitLab top-level group (`forge_key`). The two are different spenders, maybe of
    different people: an override for one never applies to the other, and each one's use is its own installation's
    (a GitLab group's installation id is its own, negative one, bot/forge_ids.py)."""
    return forge_key(job.repo.split("/", 1)[0], job.installation_id)


def operator_limits(settings: Settings, owner: str) -> dict[str, float]:
    """The quotas of `owner` (a `quota_owner`) by `<measure>_per_<window>` as the operator set them: the defaults,
    replaced by its override where one is set (0 = none)."""
    found: dict[str, float] = {key: float(getattr(settings, f"quota_{key}")) for key in KEYS}
    override = {k.lower(): v for k, v in settings.quota_overrides.items()}.get(owner.lower(), {})
    for key in found:
        if (value := override.get(key)) is not None:
            found[key] = float(value)
    return found


def limits(
    settings: Settings, owner: str, asked: Mapping[str, float] | None = None
) -> tuple[dict[str, float], list[str]]:
    """The owner's quotas: the operator's, lowered by the organisation's own config (`asked`), and a warning for
    each value there that would raise one (ignored)."""
    return repo_quotas.lowered(operator_limits(settings, owner), asked or {})


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
    token_quota: Quota | None = None  # that quota, as it stood at the start
    bounding: tuple[Quota, ...] = ()  # the cost and model-second quotas, which bound the run mid-run
    status: tuple[Quota, ...] = ()  # every quota that applies, as it stands
    warnings: tuple[str, ...] = field(default=(), compare=False)


def _spent(used: Used, job: Job, start: datetime) -> dict[str, float]:
    values = tuple(used(job.installation_id, start.strftime("%Y-%m-%d")))
    return dict(zip(MEASURES, (*values, 0.0, 0.0, 0.0)[: len(MEASURES)], strict=True))


def check(
    settings: Settings,
    used: Used,
    job: Job,
    now: datetime | None = None,
    *,
    followups: Followups | None = None,
    asked: Mapping[str, float] | None = None,
    every: bool = False,
) -> Check:
    """The first quota the job's installation has used up, if any, else its token headroom (the ledger is read only
    for windows that have a quota); with `every`, all of them are looked at (the help reply)."""
    quotas, warnings = limits(settings, quota_owner(job), asked)
    now = now or datetime.now(UTC)
    applying: Iterator[Quota] = _spend_quotas(quotas, used, job, now)
    if followups is not None and (every or job.kind in FOLLOWUP_KINDS):
        applying = chain(applying, _followup_quotas(quotas, followups, job, now))
    seen: list[Quota] = []
    for quota in applying:  # lazily: the first one used up ends the check before the next is read
        seen.append(quota)
        if quota.used >= quota.limit and not every:
            return Check(quota, warnings=tuple(warnings))
    left = _tightest_token_quota(seen)
    room = None if left is None else max(0, int(left.limit - left.used))
    bounding = tuple(q for q in seen if q.name in _BOUNDING_QUOTAS)
    return Check(tokens_left=room, token_quota=left, bounding=bounding, status=tuple(seen), warnings=tuple(warnings))


def _spend_quotas(quotas: Mapping[str, float], used: Used, job: Job, now: datetime) -> Iterator[Quota]:
    """The token, cost and model-second quotas that are set, window by window, each window's use read from the
    ledger only when it has one."""
    for window, (start, reset) in windows(now).items():
        set_here = {m: quotas[f"{m}_per_{window}"] for m in MEASURES if quotas[f"{m}_per_{window}"] > 0}
        if not set_here:
            continue
        spent = _spent(used, job, start)
        for measure, limit in set_here.items():
            yield Quota(_label(f"{measure}_per_{window}"), limit, spent[measure], reset)


def _followup_quotas(quotas: Mapping[str, float], followups: Followups, job: Job, now: datetime) -> Iterator[Quota]:
    """The follow-up quotas that are set: per PR (ever) and per UTC day."""
    day, reset = windows(now)["day"]
    for key, since, resets in (("followups_per_pr", None, None), ("followups_per_day", day.timestamp(), reset)):
        if quotas[key] > 0:
            yield Quota(_label(key), quotas[key], followups(job, since), resets)


_TOKEN_QUOTAS = frozenset(_label(f"tokens_per_{window}") for window in WINDOWS)
_BOUNDING_QUOTAS = {_label(f"{m}_per_{w}"): m for m in ("cost", "model_seconds") for w in WINDOWS}


def _tightest_token_quota(seen: list[Quota]) -> Quota | None:
    """The token quota with the least left (the first of equals), which bounds the run's token budget."""
    return min((q for q in seen if q.name in _TOKEN_QUOTAS), key=lambda q: q.limit - q.used, default=None)


def reached(settings: Settings, used: Used, job: Job, now: datetime | None = None) -> Quota | None:
    """The first quota the job's installation has used up, if any."""
    return check(settings, used, job, now).past


def tokens_left() -> int | None:
    """The token headroom of the run this thread runs (set by `guarded`); None when no token quota applies."""
    return _TOKENS_LEFT.get()


def within_quota(settings: Settings) -> Settings:
    """`settings` for the run this thread runs: its job's token budget (MINIFIX_MAX_TOKENS, the total over its
    attempts) lowered to the quota's headroom, so a run that would cross the quota stops exactly as at that budget's
    end (bot/pipeline/capacity.py `JobBudget`), its message naming the quota (`quota_notes`)."""
    left = tokens_left()
    if left is None or left >= settings.max_tokens:
        return settings
    return settings.model_copy(update={"max_tokens": max(1, left)})


def _budget_reason(quota: Quota, budget: str) -> str:
    return (
        f"this organisation's quota of {quota.amount(quota.limit)} {quota.name} was reached during the run "
        f"(its last {budget} were this run's budget); {quota.reset_words()}"
    )


def _headroom(quota: Quota) -> quota_notes.Headroom:
    """What the run may spend of a cost or model-second quota, and the words naming it when reached."""
    room = max(0.0, quota.limit - quota.used)
    unit = "of cost" if quota.name.startswith("cost") else "model-seconds"
    return quota_notes.Headroom(
        _BOUNDING_QUOTAS[quota.name], room, _budget_reason(quota, f"{quota.amount(room)} {unit}")
    )


def prices(settings: Settings, model: quota_notes.TokenPrice | None) -> quota_notes.Prices:
    """The ledger's prices (bot/worker/usage.py `Price`) per token (the higher of prompt and completion) and per
    model-second; with none set, `model`'s price of the run's model."""
    higher = max(settings.price_per_million_prompt_tokens, settings.price_per_million_completion_tokens) / 1e6
    return quota_notes.Prices(higher, settings.price_per_model_second, model)


def _help_lines(found: Check) -> tuple[str, ...]:
    return (*(q.left() for q in found.status), *found.warnings)


def guarded(
    runner: Runner,
    settings: Settings,
    used: Used,
    github: Callable[[int, str], GitHubGateway],
    *,
    followups: Followups | None = None,
    asked: Asked | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    model_price: quota_notes.TokenPrice | None = None,
) -> Runner:
    """`runner`, except that a run whose installation used up a quota is refused (or sent back to wait for the
    reset) with a comment on its issue, and one that may start runs with its token headroom known
    (`within_quota`) and its cost and model-second headroom as bounds (`model_price`: a model's per-token price
    where the operator set none, litellm's by default); `/agent help` runs with the repository's remaining quota to
    show."""
    price = prices(settings, model_price or _litellm_price)

    def checked(job: Job, *, every: bool = False) -> Check:
        return check(settings, used, job, clock(), followups=followups, asked=_wanted(asked, job), every=every)

    def run(job: Job, cancel: threading.Event) -> JobOutcome:
        if not _owner_has_quotas(settings, job) or (job.kind.is_control and job.kind != JobKind.HELP):
            return runner(job, cancel)  # no quota for this owner (nothing is read), or a control job that uses none
        if job.kind == JobKind.HELP:
            return _run_showing(runner, job, cancel, checked(job, every=True))
        found = checked(job)
        _report(job, found)
        if found.past is None:
            return _run_within(runner, job, cancel, found, price)
        return _turn_away(job, found.past, settings, github, clock)

    return run


def _wanted(asked: Asked | None, job: Job) -> Mapping[str, float]:
    """The repository's and organisation's own quotas; none when there is no reader or the config is unreadable."""
    if asked is None:
        return {}
    try:
        return asked(job)
    except Exception:  # an unreadable config is the admission gate's to report; the operator's quotas hold
        log.warning("quota_config_unread", exc_info=True)
        return {}


def _owner_has_quotas(settings: Settings, job: Job) -> bool:
    """Whether the operator set any quota for the job's owner (without one, nothing is read and nothing lowered)."""
    return any(operator_limits(settings, quota_owner(job)).values())


def _run_showing(runner: Runner, job: Job, cancel: threading.Event, found: Check) -> JobOutcome:
    """`/agent help`: the run, with every quota that applies and what is left of it to show."""
    with quota_notes.running(quota_notes.RunQuota(remaining=_help_lines(found))):
        return runner(job, cancel)


def _report(job: Job, found: Check) -> None:
    """The check's quotas as gauges, and each config value that was ignored, as a warning."""
    _observe(job, found)
    for warning in found.warnings:
        log.warning("quota_config_ignored", detail=warning)


def _litellm_price(model: str) -> float:
    from bot.agent.model import token_price  # litellm: imported at a run, never at startup

    return token_price(model)


def _run_within(
    runner: Runner, job: Job, cancel: threading.Event, found: Check, price: quota_notes.Prices
) -> JobOutcome:
    """A run no quota stops: it runs with its token headroom claimed for this thread (`tokens_left`), under a
    token quota a budget whose end names that quota, and the cost and model-second quotas' headroom as bounds."""
    note = quota_notes.RunQuota(headroom=tuple(map(_headroom, found.bounding)), prices=price)
    if found.token_quota is not None and found.tokens_left is not None:
        budget = max(1, found.tokens_left)
        reason = _budget_reason(found.token_quota, f"{budget:,} tokens")
        note = dataclasses.replace(note, token_budget=budget, token_reason=reason)
    token = _TOKENS_LEFT.set(found.tokens_left)
    try:
        with quota_notes.running(note):
            return runner(job, cancel)
    finally:
        _TOKENS_LEFT.reset(token)


def _turn_away(
    job: Job,
    quota: Quota,
    settings: Settings,
    github: Callable[[int, str], GitHubGateway],
    clock: Callable[[], datetime],
) -> JobOutcome:
    """A run past `quota`: back to the queue until its reset (MINIFIX_QUOTA_WHEN_REACHED=wait, a quota that
    resets), else refused; either way its issue is told."""
    if settings.quota_when_reached == "wait" and quota.resets_at is not None:
        return _wait(job, quota, github, clock())
    return _refuse(job, quota, github)


def _refuse(job: Job, quota: Quota, github: Callable[[int, str], GitHubGateway]) -> JobOutcome:
    """Cancelled before anything ran, with a comment that names the quota and how to go on."""
    log.info("job_refused_quota", quota=quota.name, limit=quota.limit, used=quota.used)
    body = (
        f"mini-fix did not start on this: {quota.sentence()}. Nothing was run. Ask again with "
        f"`/agent retry` or the label after the reset, or ask the App's operator to raise the quota."
    )
    _comment(github, job, body)
    return JobOutcome(JobStatus.CANCELLED, error=f"{REFUSED}: {quota.sentence()}")


def _observe(job: Job, found: Check) -> None:
    """The quotas the check looked at, as headroom gauges (the Grafana quota-headroom panel)."""
    for quota in (*found.status, *([found.past] if found.past else [])):
        room = max(0.0, quota.limit - quota.used) / quota.limit if quota.limit else 1.0
        HEADROOM.labels(installation=str(job.installation_id), quota=quota.name).set(room)


def config_quotas(github: Callable[[int, str], GitHubGateway]) -> Asked:
    """The job's repository's and organisation's own quotas (the lower of the two files' values), read as the
    admission gate reads the config; a file that cannot be used gives none (the gate reports it)."""
    from bot.pipeline.admit.gate import reader
    from bot.repo_config.load import ORG_REPO, ConfigError, load_repo_config

    def read(job: Job) -> Mapping[str, float]:
        gh = github(job.installation_id, job.repo)
        found = []
        for repo in dict.fromkeys((job.repo, f"{job.repo.split('/', 1)[0]}/{ORG_REPO}")):
            try:
                found.append(load_repo_config(repo, reader(github, job.installation_id, gh, job.repo)).config.quotas)
            except ConfigError as exc:
                log.info("quota_config_invalid", source=exc.source)
        return repo_quotas.asked(found)

    return read


def _wait(job: Job, quota: Quota, github: Callable[[int, str], GitHubGateway], now: datetime) -> JobOutcome:
    """Back to the queue until the quota's reset; one comment per quota the job waits on."""
    assert quota.resets_at is not None
    error = f"{WAITING}: {quota.name}: {quota.sentence()}"
    if not (job.error or "").startswith(f"{WAITING}: {quota.name}:"):
        body = (
            f"mini-fix will start on this at {quota.resets_at:%Y-%m-%d %H:%M} UTC: {quota.sentence()}. "
            "The run stays queued until then; nothing else is needed (`/agent stop` drops it)."
        )
        _comment(github, job, body)
    log.info("job_waits_for_quota", quota=quota.name, limit=quota.limit, used=quota.used, until=str(quota.resets_at))
    seconds = max(0.0, (quota.resets_at - now).total_seconds()) + WAIT_MARGIN_SECONDS
    return JobOutcome(JobStatus.QUEUED, error=error, retry_in=seconds, claim_spent=False)  # nothing ran


def _comment(github: Callable[[int, str], GitHubGateway], job: Job, body: str) -> None:
    try:
        github(job.installation_id, job.repo).create_comment(job.issue, body)
    except GitHubError as exc:
        log.warning("quota_comment_failed", error=str(exc))
