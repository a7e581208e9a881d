"""The browser tests reuse the unit suite's settings, ledger and queue fixtures (real SQLite files in tmp)."""

from tests.unit.conftest import job_queue, ledger, settings

__all__ = ["job_queue", "ledger", "settings"]
