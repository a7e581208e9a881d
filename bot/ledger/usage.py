"""What each run used, in the ledger: one row per claim of a job, written as running totals.

A row (keyed by the job and a key the worker draws for the claim) holds the claim's totals so far (model calls,
prompt and completion tokens, model seconds, money, sandbox CPU-seconds, wall seconds) and a `version` the worker raises
with every write. A write only replaces an older version, and nothing replaces a row marked final: a write that
arrives twice, or late, changes nothing, and a job resumed after its worker was killed gets a row of its own (a
new claim) while the dead claim's row keeps what it had recorded. Summing the rows counts every model call once.
"""

from __future__ import annotations

import builtins
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from bot.forge_ids import forge_key
from bot.ledger.sql import Dialect

COLUMNS = (
    "job_id, claim, attempt, installation_id, repo, day, version, final, calls, prompt_tokens, completion_tokens, "
    "model_seconds, cost, sandbox_cpu_seconds, wall_seconds, updated_at"
)
_TABLE = (
    "CREATE TABLE IF NOT EXISTS job_usage (job_id TEXT NOT NULL, claim TEXT NOT NULL, attempt INTEGER NOT NULL, "
    "installation_id BIGINT NOT NULL, repo TEXT NOT NULL, day TEXT NOT NULL, version INTEGER NOT NULL, "
    "final INTEGER NOT NULL, calls INTEGER NOT NULL, prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL, "
    "model_seconds {real} NOT NULL, cost {real} NOT NULL, sandbox_cpu_seconds {real} NOT NULL, "
    "wall_seconds {real} NOT NULL, updated_at {real} NOT NULL, PRIMARY KEY (job_id, claim))"
)
_DAY_INDEX = "CREATE INDEX IF NOT EXISTS job_usage_day ON job_usage (day, installation_id)"
SQLITE_SCHEMA = (_TABLE.format(real="REAL"), _DAY_INDEX)
POSTGRES_SCHEMA = (_TABLE.format(real="DOUBLE PRECISION"), _DAY_INDEX)
UPSERT = (
    f"INSERT INTO job_usage ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (job_id, claim) DO UPDATE SET version = excluded.version, final = excluded.final, "
    "calls = excluded.calls, prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, "
    "model_seconds = excluded.model_seconds, cost = excluded.cost, sandbox_cpu_seconds = excluded.sandbox_cpu_seconds, "
    "wall_seconds = excluded.wall_seconds, updated_at = excluded.updated_at "
    "WHERE job_usage.final = 0 AND job_usage.version < excluded.version"
)
GROUPS = {"repo": "repo", "installation": "installation_id", "day": "day"}
# The same path may be a GitHub repository and a GitLab project of different owners: grouped by repository, rows
# are grouped by forge too (the sign of the installation id, bot/forge_ids.py), and a GitLab project's sums go by
# its `forge_key`, `gitlab:group/project` (a GitHub repository's stays `owner/name`). An installation is one forge's
# already; a day's sums (or the grand total) are the deployment's, both forges together.
GITLAB_SIGN = "CASE WHEN installation_id < 0 THEN -1 ELSE 1 END"


@dataclass(frozen=True)
class Usage:
    """One claim's totals so far (`version` counts the worker's writes of it; `final` once the run ended)."""

    job_id: str
    claim: str  # this claim's own key (a claim given back at shutdown keeps its attempt number, not its key)
    attempt: int
    installation_id: int
    repo: str
    day: str  # UTC date the claim began, YYYY-MM-DD
    version: int = 0
    final: bool = False
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0
    cost: float = 0.0  # the operator's prices (MINIFIX_PRICE_*), else litellm's for a hosted model; 0 = unpriced
    sandbox_cpu_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def day_of(epoch: float) -> str:
    """The UTC date of an epoch, as usage rows store it."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


def record(d: Dialect, conn: Any, use: Usage, now: float) -> bool:
    """Write one claim's totals unless the row holds a newer version or is final; True when it changed the row."""
    values = asdict(use)
    params = (*(values[c.strip()] for c in COLUMNS.split(",")[:-1]), now)
    params = tuple(int(v) if isinstance(v, bool) else v for v in params)
    return bool(conn.execute(d.sql(UPSERT), params).rowcount == 1)


def totals(
    d: Dialect, conn: Any, by: builtins.list[str], *, since: str = "", installation_id: int | None = None
) -> builtins.list[dict[str, Any]]:
    """Sums grouped by `by` (of repo, installation, day), from the UTC day `since` on; largest token use first."""
    forge = ["forge"] if "repo" in by else []  # a repository's forge, as the sign of its installation ids
    keys = [GROUPS[name] for name in by] + [GITLAB_SIGN] * len(forge)
    where: builtins.list[str] = ["day >= ?"]
    params: builtins.list[Any] = [since]
    if installation_id is not None:
        where.append("installation_id = ?")
        params.append(installation_id)
    select = ", ".join(keys) + ", " if keys else ""
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    rows = conn.execute(
        d.sql(
            f"SELECT {select}COUNT(DISTINCT job_id), SUM(calls), SUM(prompt_tokens), SUM(completion_tokens), "
            f"SUM(model_seconds), SUM(cost), SUM(sandbox_cpu_seconds), SUM(wall_seconds) FROM job_usage "
            f"WHERE {' AND '.join(where)}{group}"
        ),
        tuple(params),
    ).fetchall()
    names = [*by, *forge, "jobs", "calls", "prompt_tokens", "completion_tokens", "model_seconds", "cost",
             "sandbox_cpu_seconds", "wall_seconds"]  # fmt: skip
    out = []
    for row in rows:
        if row[len(keys)] == 0:
            continue  # an aggregate over no rows
        item = dict(zip(names, row, strict=True))
        if forge:
            item["repo"] = forge_key(item["repo"], int(item.pop("forge")))
        for name in ("calls", "prompt_tokens", "completion_tokens"):
            item[name] = int(item[name] or 0)
        for name in ("model_seconds", "sandbox_cpu_seconds", "wall_seconds"):
            item[name] = round(float(item[name] or 0.0), 3)
        item["cost"] = round(float(item["cost"] or 0.0), 6)
        out.append(item)
    out.sort(key=lambda r: (-(r["prompt_tokens"] + r["completion_tokens"]), [str(r[k]) for k in by]))
    return out


def claims(d: Dialect, conn: Any, job_id: str) -> builtins.list[Usage]:
    """A job's usage rows, one per claim, in attempt order."""
    text = f"SELECT {COLUMNS} FROM job_usage WHERE job_id = ? ORDER BY attempt, updated_at"
    rows = conn.execute(d.sql(text), (job_id,))
    fields = [c.strip() for c in COLUMNS.split(",")][:-1]
    found = []
    for row in rows.fetchall():
        values = dict(zip(fields, row[:-1], strict=True))
        values["final"] = bool(values["final"])
        found.append(Usage(**values))
    return found
