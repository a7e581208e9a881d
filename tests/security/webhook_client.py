"""The webhook route over HTTP for the security tests: the unit tier's app, ledger and signing, re-exported."""

from __future__ import annotations

from tests.unit.conftest import SECRET, _deliver, _sign, client, job_queue, ledger, settings

__all__ = ["SECRET", "_deliver", "_sign", "client", "job_queue", "ledger", "settings"]
