"""POST /webhook/gitlab: GitLab's token and headers, then the same recording path as GitHub's (bot/webhooks/receive.py).

GitLab disables a hook that does not answer 2xx within 10 s, so nothing here calls GitLab: verify, parse, decide,
record durably, answer. `X-Gitlab-Token` is a plain shared secret (not an HMAC of the body): compared in constant
time. The idempotency key is `Idempotency-Key` where GitLab sends it (stable across its retries), else
`X-Gitlab-Event-UUID` with the event name: one UUID is shared by the several hooks of one action.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

import structlog
from fastapi import Request
from fastapi.responses import Response
from structlog.typing import FilteringBoundLogger

from bot.forge_ids import installation_of
from bot.gitlab.webhooks import ROUTES, decide
from bot.gitlab.webhooks_context import project_path
from bot.ledger.contract import Ledger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.webhooks.decision import Payload, dig
from bot.webhooks.lookups import LedgerReads
from bot.webhooks.receive import MAX_DELIVERY_ID, REPLAYED, DeliveryRecorder, Rejected, parse, read_body

TOKEN_HINT = "set the webhook's secret token in GitLab to MINIFIX_GITLAB_WEBHOOK_SECRET"
NOT_CONFIGURED_HINT = "set MINIFIX_GITLAB_WEBHOOK_SECRET (and MINIFIX_GITLAB_URL, MINIFIX_GITLAB_TOKEN) to serve GitLab"
DELIVERY_PREFIX = "gitlab:"  # a GitLab delivery's key never collides with a GitHub delivery id in the ledger

log = structlog.get_logger(__name__)


def check_token(secret: str, token: str | None) -> None:
    """A 401 unless `X-Gitlab-Token` equals the secret (constant time; any bytes in the header are just wrong)."""
    if not token:
        raise Rejected(401, "missing X-Gitlab-Token header", TOKEN_HINT)
    # Starlette decodes header bytes as latin-1: encoding back gives the bytes GitLab sent.
    if not hmac.compare_digest(token.encode("latin-1"), secret.encode("utf-8")):
        raise Rejected(401, "X-Gitlab-Token does not match", TOKEN_HINT)


def delivery_key(event: str, event_uuid: str, idempotency_key: str) -> str:
    """The delivery's idempotency key, or a 400 when GitLab's headers give none or a malformed one."""
    if not event:
        raise Rejected(400, "missing X-Gitlab-Event header")
    key = idempotency_key or (f"{event_uuid}:{event}" if event_uuid else "")
    if not key:
        raise Rejected(400, "missing Idempotency-Key and X-Gitlab-Event-UUID headers")
    if not (key.isascii() and key.isprintable() and len(key) <= MAX_DELIVERY_ID + 40):
        raise Rejected(400, "malformed X-Gitlab-Event, X-Gitlab-Event-UUID or Idempotency-Key header")
    return DELIVERY_PREFIX + key


def settings_for(event: str, payload: Payload, settings: Settings, ledger: LedgerReads) -> Settings:
    """The settings to decide with: the trigger label a worker last read from the project's config."""
    if event not in ("Issue Hook", "Confidential Issue Hook") or not isinstance(
        dig(payload, "changes", "labels"), dict
    ):
        return settings
    repo = project_path(payload)
    label = ledger.trigger_label(repo, installation_id=installation_of(repo)) if repo else None
    return settings if label is None or label == settings.label else settings.model_copy(update={"label": label})


class GitLabReceiver(DeliveryRecorder):
    """GitLab's webhook route; answers 404 (and records nothing) while GitLab is not configured."""

    forge = "gitlab"

    def __init__(self, settings: Settings, ledger: Ledger, queue: JobQueue) -> None:
        super().__init__(settings, ledger, queue)
        secret = settings.gitlab_webhook_secret
        self._secret = secret.get_secret_value() if secret is not None else ""

    async def handle(self, request: Request) -> Response:
        """Answer one delivery."""
        started = time.perf_counter()
        event = request.headers.get("x-gitlab-event", "")
        dlog = log.bind(forge=self.forge, gitlab_event=event, event_uuid=request.headers.get("x-gitlab-event-uuid"))
        try:
            status, body = await self._accept(request, event, dlog)
        except Rejected as exc:
            dlog.warning("delivery rejected", status=exc.status, reason=exc.message)
            status, body = exc.status, exc.body()
        known = event if event in ROUTES or event == "System Hook" else "other"
        return self.answer(known, status, body, started)

    async def _accept(self, request: Request, event: str, dlog: FilteringBoundLogger) -> tuple[int, dict[str, Any]]:
        if not self._secret:
            raise Rejected(404, "GitLab is not configured on this mini-fix", NOT_CONFIGURED_HINT)
        raw = await read_body(request)
        check_token(self._secret, request.headers.get("x-gitlab-token"))
        headers = request.headers
        delivery = delivery_key(event, headers.get("x-gitlab-event-uuid", ""), headers.get("idempotency-key", ""))
        dlog = dlog.bind(delivery_id=delivery)
        payload = parse(raw)
        digest = hashlib.sha256(raw).digest()
        if self.replayed(digest, delivery, dlog):
            return 200, REPLAYED
        return await self.record(event, delivery, payload, digest, dlog, settings_for=settings_for, decide=decide)
