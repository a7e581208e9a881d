"""`installation` and `installation_repositories` events: deleted or suspended ones stop their jobs."""

from __future__ import annotations

from bot.jobs import InstallationChange
from bot.settings import Settings
from bot.webhooks.decision import Decision, Payload, dig, dig_int, dig_str, ignore


def _names(payload: Payload, key: str) -> tuple[str, ...]:
    repos = dig(payload, key)
    if not isinstance(repos, list):
        return ()
    return tuple(r["full_name"] for r in repos if isinstance(r, dict) and isinstance(r.get("full_name"), str))


def decide(payload: Payload, _settings: Settings, _delivery_id: str) -> Decision:
    """Decide an installation delivery: always recorded, never a job."""
    installation_id = dig_int(payload, "installation", "id")
    action = dig_str(payload, "action") or ""
    if installation_id is None:
        return ignore("payload lacks installation.id")
    added = _names(payload, "repositories_added") or _names(payload, "repositories")
    change = InstallationChange(
        installation_id=installation_id,
        action=action,
        account=dig_str(payload, "installation", "account", "login") or "",
        repositories_added=added,
        repositories_removed=_names(payload, "repositories_removed"),
    )
    return Decision("installation", f"installation {action}", installation=change)
