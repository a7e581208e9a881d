"""Per-run link signatures: a run's pages open only through a link mini-fix posted (or with the operator token).

Run ids are short and could be guessed; the signature is an HMAC of the run id under a key derived from the
webhook secret, so links stay valid across restarts and workers, and no key needs storing.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from bot.settings import Settings, SettingsError

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_PURPOSE = b"mini-fix run links v1"


def valid_run_id(run_id: str) -> bool:
    """Whether `run_id` is shaped like one of ours (letters, digits, - and _; no dots or slashes)."""
    return RUN_ID.fullmatch(run_id) is not None


def run_signature(settings: Settings, run_id: str) -> str:
    """The signature of one run's links (hex); SettingsError without a webhook secret."""
    key = hmac.new(settings.require_webhook_secret().encode(), _PURPOSE, hashlib.sha256).digest()
    return hmac.new(key, run_id.encode(), hashlib.sha256).hexdigest()[:32]


def check_signature(settings: Settings, run_id: str, signature: str) -> bool:
    """Whether `signature` is the one for `run_id` (constant-time)."""
    return hmac.compare_digest(run_signature(settings, run_id), signature)


def signed_run_url(settings: Settings, run_id: str, page: str = "") -> str | None:
    """The run's public page (`page` = "" or "trajectory.json"), signed; None without a public URL or a secret."""
    if not settings.public_url:
        return None
    try:
        sig = run_signature(settings, run_id)
    except SettingsError:
        return None
    path = f"/runs/{run_id}" + (f"/{page}" if page else "")
    return f"{settings.public_url.rstrip('/')}{path}?sig={sig}"
