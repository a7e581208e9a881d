"""The webhook path's cached ledger reads: served from memory within the TTL, reloaded after it, dropped on demand."""

from __future__ import annotations

from bot.jobs import JobStatus
from bot.webhooks.lookups import CachedReads


class CountingLedger:
    def __init__(self) -> None:
        self.labels: dict[str, str | None] = {}
        self.active: dict[int, bool] = {}
        self.reads = 0

    def trigger_label(self, repo: str, *, installation_id: int) -> str | None:
        self.reads += 1
        return self.labels.get(f"gitlab:{repo}" if installation_id < 0 else repo)

    def installation_active(self, installation_id: int) -> bool:
        self.reads += 1
        return self.active.get(installation_id, True)

    def count_jobs(self, installation_id: int, status: JobStatus, *, other_than: tuple[str, int] | None = None) -> int:
        self.reads += 1
        return 7


def test_reads_are_cached_for_the_ttl_then_reloaded() -> None:
    now = [100.0]
    ledger = CountingLedger()
    reads = CachedReads(ledger, ttl=5.0, clock=lambda: now[0])
    assert reads.trigger_label("o/r", installation_id=1) is None and reads.installation_active(1) is True
    ledger.labels["o/r"], ledger.active[1] = "ai-fix", False
    now[0] += 4.9
    assert reads.trigger_label("o/r", installation_id=1) is None and reads.installation_active(1) is True
    assert ledger.reads == 2
    now[0] += 0.2
    assert reads.trigger_label("o/r", installation_id=1) == "ai-fix" and reads.installation_active(1) is False
    assert ledger.reads == 4


def test_forget_drops_the_cache_and_counts_are_never_cached() -> None:
    ledger = CountingLedger()
    reads = CachedReads(ledger, ttl=60.0, clock=lambda: 0.0)
    assert reads.installation_active(3) is True
    ledger.active[3] = False
    reads.forget()
    assert reads.installation_active(3) is False
    assert reads.count_jobs(3, JobStatus.QUEUED) == reads.count_jobs(3, JobStatus.QUEUED) == 7
    assert ledger.reads == 4


def test_the_same_path_on_the_other_forge_is_cached_apart() -> None:
    ledger = CountingLedger()
    ledger.labels["gitlab:o/r"] = "gl-fix"
    reads = CachedReads(ledger, ttl=60.0, clock=lambda: 0.0)
    assert reads.trigger_label("o/r", installation_id=1) is None  # GitHub's o/r: cached as GitHub's
    assert reads.trigger_label("o/r", installation_id=-5) == "gl-fix"  # GitLab's o/r: not served GitHub's entry
    assert reads.trigger_label("o/r", installation_id=2) is None and ledger.reads == 2  # reinstalled: same forge
