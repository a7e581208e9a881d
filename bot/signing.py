"""Per-run link signatures: a run's pages open only through a link mini-fix posted (or with the operator token).

Run ids are short and could be guessed; the signature is an HMAC of the run id and the link's expiry time under a
key derived from the webhook secret (GitHub's; GitLab's in a GitLab-only deployment), so links stay valid across
restarts and workers (until they expire, after MINIFIX_RUN_LINK_DAYS), and no key needs storing.

The scheme is versioned (`v=` in the query) because links posted on GitHub outlive upgrades: every version ever
issued is still checked, each until its links expire. v0 (`?sig=`, no expiry) signed the run id alone; its links
are honoured until `run_link_days` after the run started, as if they had carried an expiry. v1 (`?exp=&sig=`) and
v2 (`?exp=&sig=&v=2`) sign the run id and the expiry; v2 binds the version into the signed text too.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping

from bot.settings import Settings, SettingsError

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_PURPOSE = b"mini-fix run links v1"  # the key derivation every version so far shares
CURRENT_VERSION = "2"
RunStarted = Callable[[], float | None]  # the run's start, unix seconds (read only for a v0 link)


def valid_run_id(run_id: str) -> bool:
    """Whether `run_id` is shaped like one of ours (letters, digits, - and _; no dots or slashes)."""
    return RUN_ID.fullmatch(run_id) is not None


def _key(settings: Settings) -> bytes:
    return hmac.new(_key_secret(settings).encode(), _PURPOSE, hashlib.sha256).digest()


def _key_secret(settings: Settings) -> str:
    """GitHub's webhook secret where GitHub is served (the key every link posted so far was signed under), else
    GitLab's (a GitLab-only deployment); SettingsError with neither. Adding GitHub to a GitLab-only deployment thus
    changes the key: the links it posted before stop opening (the operator token still does)."""
    if settings.webhook_secret.get_secret_value().strip() or settings.gitlab_webhook_secret is None:
        return settings.require_webhook_secret()
    return settings.require_gitlab_webhook_secret()


def _mac(settings: Settings, text: str) -> str:
    return hmac.new(_key(settings), text.encode(), hashlib.sha256).hexdigest()[:32]


# What each version signed; a version is only ever added here, never changed, or its posted links break.
_SIGNED_TEXT: dict[str, Callable[[str, int], str]] = {
    "0": lambda run_id, _expires: run_id,
    "1": lambda run_id, expires: f"{run_id}:{expires}",
    "2": lambda run_id, expires: f"v2:{run_id}:{expires}",
}


def run_signature(settings: Settings, run_id: str, expires: int, version: str = CURRENT_VERSION) -> str:
    """The signature of one run's links valid until `expires` (unix seconds), hex; SettingsError without a secret."""
    return _mac(settings, _SIGNED_TEXT[version](run_id, expires))


def run_query(settings: Settings, run_id: str, now: float | None = None) -> str:
    """`exp=…&sig=…&v=…` for a link to the run that expires after `run_link_days`."""
    expires = int((time.time() if now is None else now) + settings.run_link_days * 86_400)
    return f"exp={expires}&sig={run_signature(settings, run_id, expires)}&v={CURRENT_VERSION}"


def check_link(
    settings: Settings, run_id: str, query: Mapping[str, str], started: RunStarted, now: float | None = None
) -> bool:
    """Whether the link's query (`v`, `exp`, `sig`) signs `run_id` under any version and has not expired."""
    signature, expires = query.get("sig", ""), query.get("exp", "")
    version = query.get("v") or ("1" if expires else "0")
    if version not in _SIGNED_TEXT or not signature.isascii() or not signature:
        return False
    if version == "0":  # issued without an expiry: it gets the one it would have had, from the run's start
        if expires:
            return False
        start = started()
        expires = "" if start is None else str(int(start + settings.run_link_days * 86_400))
    return _check(settings, run_id, signature, expires, version, now)


def _check(settings: Settings, run_id: str, signature: str, expires: str, version: str, now: float | None) -> bool:
    if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
        return False
    if int(expires) < (time.time() if now is None else now):
        return False
    return hmac.compare_digest(run_signature(settings, run_id, int(expires), version), signature)


def signed_run_url(settings: Settings, run_id: str, page: str = "") -> str | None:
    """The run's public page (`page` = "" or "trajectory.json"), signed; None without a public URL or a secret."""
    if not settings.public_url:
        return None
    try:
        query = run_query(settings, run_id)
    except SettingsError:
        return None
    path = f"/runs/{run_id}" + (f"/{page}" if page else "")
    return f"{settings.public_url.rstrip('/')}{path}?{query}"
