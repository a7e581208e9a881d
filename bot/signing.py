"""Per-run link signatures: a run's pages open only through a link mini-fix posted (or with the operator token).

Run ids are short and could be guessed; the signature is an HMAC of the run id and the link's expiry time under a
key derived from the webhook secret, so links stay valid across restarts and workers (until they expire, after
MINIFIX_RUN_LINK_DAYS), and no key needs storing.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time

from bot.settings import Settings, SettingsError

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_PURPOSE = b"mini-fix run links v1"


def valid_run_id(run_id: str) -> bool:
    """Whether `run_id` is shaped like one of ours (letters, digits, - and _; no dots or slashes)."""
    return RUN_ID.fullmatch(run_id) is not None


def run_signature(settings: Settings, run_id: str, expires: int) -> str:
    """The signature of one run's links valid until `expires` (unix seconds), hex; SettingsError without a secret."""
    key = hmac.new(settings.require_webhook_secret().encode(), _PURPOSE, hashlib.sha256).digest()
    return hmac.new(key, f"{run_id}:{expires}".encode(), hashlib.sha256).hexdigest()[:32]


def run_query(settings: Settings, run_id: str, now: float | None = None) -> str:
    """`exp=…&sig=…` for a link to the run that expires after `run_link_days`."""
    expires = int((time.time() if now is None else now) + settings.run_link_days * 86_400)
    return f"exp={expires}&sig={run_signature(settings, run_id, expires)}"


def check_signature(settings: Settings, run_id: str, signature: str, expires: str, now: float | None = None) -> bool:
    """Whether `signature` is the one for `run_id` until `expires`, and that time has not passed (constant-time)."""
    if not (signature.isascii() and expires.isascii() and expires.isdigit() and len(expires) <= 12):
        return False
    if int(expires) < (time.time() if now is None else now):
        return False
    return hmac.compare_digest(run_signature(settings, run_id, int(expires)), signature)


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
