"""The job ledger: the truth about every job. The queue only carries job ids; this decides who runs what.

This module only opens the configured driver; the contract lives in `bot.ledger.contract`.
"""

from __future__ import annotations

from pathlib import Path

from bot.ledger.contract import Ledger
from bot.settings import Settings, SettingsError, is_postgres_url


def sqlite_path(database_url: str) -> Path:
    """The file of a sqlite:/// URL, or a SettingsError naming MINIFIX_DATABASE_URL."""
    prefix = "sqlite:///"
    if not database_url.startswith(prefix):
        raise SettingsError(
            f"MINIFIX_DATABASE_URL={database_url.split('://')[0]}://... is not supported: "
            "use sqlite:///PATH (the default, in MINIFIX_DATA_DIR) or postgresql://USER:PASSWORD@HOST/DB."
        )
    return Path(database_url[len(prefix) :])


def open_ledger(settings: Settings) -> Ledger:
    """The ledger named by settings.database_url: PostgreSQL for a postgresql:// URL, else a SQLite file."""
    url = settings.database_url or ""
    if is_postgres_url(url):
        from bot.ledger.postgres.ledger import PostgresLedger

        return PostgresLedger(url)
    from bot.ledger.sqlite.ledger import SqliteLedger

    path = sqlite_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteLedger(path)
