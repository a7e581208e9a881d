"""How many CI and review follow-ups an installation (or one issue's PR) has started, for the follow-up quotas.

A follow-up counts once a worker claimed it (`started_at`), except one a quota turned away or keeps waiting (its
error says `quota_...` and it never ran); the job asking is never counted against itself.
"""

from __future__ import annotations

from typing import Any

from bot.ledger.sql import ISSUE, Dialect, issue_params

STARTED = (
    "SELECT COUNT(*) FROM jobs WHERE kind IN ('ci', 'review') AND id <> ? "
    "AND started_at IS NOT NULL AND started_at >= ? "
    "AND NOT (status IN ('queued', 'cancelled') AND error IS NOT NULL AND SUBSTR(error, 1, 5) = 'quota')"
)
OF_INSTALLATION = " AND installation_id = ?"
# One issue's follow-ups, whatever installation asked (a reinstalled App's older ones count), of the job's forge only.
ON_ISSUE = f" AND {ISSUE}"


def started(
    d: Dialect, conn: Any, installation_id: int, job_id: str, since: float, issue: tuple[str, int] | None = None
) -> int:
    """Follow-ups of the installation started from `since` (epoch s) on, other than `job_id`; with `issue`
    (repo, number), that issue's on the installation's forge instead."""
    params: tuple[Any, ...]
    if issue is None:
        text, params = STARTED + OF_INSTALLATION, (job_id, since, installation_id)
    else:
        text, params = STARTED + ON_ISSUE, (job_id, since, *issue_params(*issue, installation_id))
    return int(conn.execute(d.sql(text), params).fetchone()[0])
