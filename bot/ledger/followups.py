"""How many CI and review follow-ups an installation (or one issue's PR) has started, for the follow-up quotas.

A follow-up counts once a worker claimed it (`started_at`), except one a quota turned away or keeps waiting (its
error says `quota_...` and it never ran); the job asking is never counted against itself.
"""

from __future__ import annotations

from typing import Any

from bot.ledger.sql import Dialect

STARTED = (
    "SELECT COUNT(*) FROM jobs WHERE kind IN ('ci', 'review') AND installation_id = ? AND id <> ? "
    "AND started_at IS NOT NULL AND started_at >= ? "
    "AND NOT (status IN ('queued', 'cancelled') AND error IS NOT NULL AND SUBSTR(error, 1, 5) = 'quota')"
)
ON_ISSUE = " AND repo = ? AND issue = ?"


def started(
    d: Dialect, conn: Any, installation_id: int, job_id: str, since: float, issue: tuple[str, int] | None = None
) -> int:
    """Follow-ups of the installation started from `since` (epoch s) on, other than `job_id`; with `issue`
    (repo, number), only that issue's."""
    text, params = STARTED, [installation_id, job_id, since]
    if issue is not None:
        text += ON_ISSUE
        params += list(issue)
    return int(conn.execute(d.sql(text), tuple(params)).fetchone()[0])
