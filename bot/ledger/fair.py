"""Which queued run a free slot takes: fair share between installations (then repositories), under the running cap.

A slot does not claim the job id it was woken for: every queue entry only says "a run may be waiting", and the slot
claims the fairest claimable run in one write transaction (SQLite's writer thread; a PostgreSQL advisory lock), so
the running cap is checked and the job claimed in one step, and two slots can never both take an installation's
last free place.

Fairest: the installation with the fewest runs going now per unit of its weight, then the fewest runs started in
the recent window per unit of weight, then the one that started a run least recently, then the oldest waiting job;
inside it, the repository ordered the same way (unweighted); inside that, the oldest job. A burst of 40 issues
from one organisation therefore gets every other free slot at most while another organisation has work waiting.
Follow-ups (CI, review) and retries are runs of their issue's installation and count against its share.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.jobs import Job
from bot.ledger.sql import DUE, RUNS, Dialect, select_jobs

# The oldest claimable run of each (installation, repository): queued and due, or running on a lease that ran out
# (its worker died) with claims left; the reconciler gives up on the rest.
CANDIDATES = (
    "SELECT id, installation_id, repo, created_at FROM (SELECT id, installation_id, repo, created_at, "
    "ROW_NUMBER() OVER (PARTITION BY installation_id, repo ORDER BY created_at, {tiebreak}) AS n FROM jobs "
    f"WHERE {RUNS} AND ((status = 'queued' AND {DUE}) OR (status = 'running' AND lease_expires_at < ? "
    "AND attempts < ?))) AS c WHERE n = 1"
)
RUNNING = (
    f"SELECT installation_id, repo, COUNT(*) FROM jobs WHERE status = 'running' AND {RUNS} "
    "AND lease_expires_at >= ? GROUP BY installation_id, repo"
)
RECENT = (
    f"SELECT installation_id, repo, COUNT(*), MAX(started_at) FROM jobs WHERE started_at >= ? AND {RUNS} "
    "GROUP BY installation_id, repo"
)
CLAIM = (
    "UPDATE jobs SET status = 'running', worker_id = ?, lease_expires_at = ?, attempts = attempts + 1, "
    "updated_at = ?, started_at = ? WHERE id = ? AND ((status = 'queued' AND (lease_expires_at IS NULL OR "
    "lease_expires_at <= ?)) OR (status = 'running' AND lease_expires_at < ?))"
)


@dataclass(frozen=True)
class ClaimPolicy:
    """The operator's rules for taking the next run (MINIFIX_MAX_RUNNING_PER_INSTALLATION, MINIFIX_FAIR_SHARE_*)."""

    running_cap: int = 0  # runs of one installation at once, across workers; 0 = no cap
    weights: Mapping[str, float] = field(default_factory=dict)  # owner login (lower case) -> share; others 1
    window_seconds: float = 3600.0  # how far back started runs count against a share
    max_claims: int = 3  # a run whose lease ran out this many times is the reconciler's to fail, not to claim

    def weight(self, repo: str) -> float:
        """The share of the repository's owner."""
        return float(self.weights.get(repo.split("/", 1)[0].lower(), 1.0))


@dataclass
class Use:
    """What an installation or repository used: runs going now, runs started in the window, its latest start."""

    running: int = 0
    recent: int = 0
    last: float = 0.0

    def add(self, other: Use) -> None:
        self.running += other.running
        self.recent += other.recent
        self.last = max(self.last, other.last)


@dataclass(frozen=True)
class Candidate:
    """The oldest claimable run of one (installation, repository)."""

    job_id: str
    installation_id: int
    repo: str
    created_at: float


Key = tuple[int, str]


def choose(candidates: list[Candidate], usage: Mapping[Key, Use], policy: ClaimPolicy) -> Candidate | None:
    """The fairest candidate whose installation is under the running cap; None when every one is capped."""
    by_inst: dict[int, Use] = {}
    for (inst, _repo), use in usage.items():
        by_inst.setdefault(inst, Use()).add(use)
    cap = policy.running_cap
    open_ = [c for c in candidates if cap <= 0 or by_inst.get(c.installation_id, Use()).running < cap]
    if not open_:
        return None
    oldest: dict[int, float] = {}
    for c in open_:
        oldest[c.installation_id] = min(oldest.get(c.installation_id, c.created_at), c.created_at)

    def inst_key(c: Candidate) -> tuple[float, float, float, float]:
        use, weight = by_inst.get(c.installation_id, Use()), policy.weight(c.repo)
        return use.running / weight, use.recent / weight, use.last, oldest[c.installation_id]

    best = min(open_, key=inst_key)
    siblings = [c for c in open_ if c.installation_id == best.installation_id]

    def repo_key(c: Candidate) -> tuple[int, int, float, float]:
        use = usage.get((c.installation_id, c.repo), Use())
        return use.running, use.recent, use.last, c.created_at

    return min(siblings, key=repo_key)


def claim_next(d: Dialect, conn: Any, worker_id: str, lease_seconds: float, policy: ClaimPolicy) -> Job | None:
    """Claim the fairest claimable run; run inside one write transaction that serialises claims."""
    now = time.time()
    rows = conn.execute(d.sql(CANDIDATES.format(tiebreak=d.tiebreak)), (now, now, policy.max_claims)).fetchall()
    candidates = [Candidate(str(r[0]), int(r[1]), str(r[2]), float(r[3])) for r in rows]
    if not candidates:
        return None
    usage: dict[Key, Use] = {}
    for inst, repo, running in conn.execute(d.sql(RUNNING), (now,)).fetchall():
        usage.setdefault((int(inst), str(repo)), Use()).running = int(running)
    for inst, repo, recent, last in conn.execute(d.sql(RECENT), (now - policy.window_seconds,)).fetchall():
        use = usage.setdefault((int(inst), str(repo)), Use())
        use.recent, use.last = int(recent), float(last or 0.0)
    pick = choose(candidates, usage, policy)
    if pick is None:
        return None
    params = (worker_id, now + lease_seconds, now, now, pick.job_id, now, now)
    if conn.execute(d.sql(CLAIM), params).rowcount != 1:
        return None
    return select_jobs(d, conn, "id = ?", (pick.job_id,))[0]
