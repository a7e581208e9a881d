"""POST /webhook: verify, read, decide, record durably, answer 202. Bad input gets a 4xx here, never a 500.

`DeliveryRecorder` is the forge-neutral part (decide, guard, record, answer); `WebhookReceiver` is GitHub's route on
it, and bot/gitlab/receive.py is GitLab's."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

import orjson
import structlog
from fastapi import Request
from fastapi.responses import Response
from githubkit.webhooks import verify
from structlog.typing import FilteringBoundLogger

from bot import metrics
from bot.jobs import JobRequest, JobStatus
from bot.ledger.contract import Ledger, SubmitResult
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.webhooks import ROUTES, Decision, decide
from bot.webhooks.decision import Payload
from bot.webhooks.guards import guard, settings_for
from bot.webhooks.lookups import CachedReads, LedgerReads
from bot.webhooks.payload import BadPayload, ReplayWindow, parse_body

MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
MAX_DELIVERY_ID = 100  # GitHub's are UUIDs
SECRET_HINT = "sign with the App's webhook secret (MINIFIX_WEBHOOK_SECRET must equal the secret set on GitHub)"

log = structlog.get_logger(__name__)


RETRY_AFTER_SECONDS = "10"
REPLAYED: dict[str, Any] = {"action": "ignored", "reason": "the same body came lately under another delivery id"}


class Rejected(Exception):
    """A delivery we refuse, with the status and a message for whoever sent it."""

    def __init__(self, status: int, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.hint = status, message, hint

    def body(self) -> dict[str, str]:
        return {"error": self.message, "hint": self.hint} if self.hint else {"error": self.message}


async def read_body(request: Request) -> bytes:
    """The raw body, refused (413) past 25 MB before it is all read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise Rejected(413, "payload over 25 MB")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise Rejected(413, "payload over 25 MB")
        chunks.append(chunk)
    return b"".join(chunks)


def _check_signature(secret: str, body: bytes, signature: str | None) -> None:
    if not signature:
        raise Rejected(401, "missing X-Hub-Signature-256 header", SECRET_HINT)
    # Non-ASCII makes hmac.compare_digest raise: a malformed header is a 401 like any other wrong one.
    if not (signature.isascii() and signature.startswith("sha256=")) or not verify(secret, body, signature):
        raise Rejected(401, "signature does not match the payload", SECRET_HINT)


def parse(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or a 400 saying why not."""
    try:
        return parse_body(body)
    except BadPayload as exc:
        raise Rejected(400, str(exc)) from exc


@runtime_checkable
class LoopSubmit(Protocol):
    """A ledger that commits on the event loop's own thread (SQLite); others go through their writer thread."""

    async def submit_async(self, req: JobRequest) -> SubmitResult: ...


SettingsFor = Callable[[str, Payload, Settings, LedgerReads], Settings]
Decide = Callable[..., Decision]


class DeliveryRecorder:
    """What every forge's receiver shares once it has verified and read a delivery: decide, guard, record durably,
    answer. Nothing here calls a forge or a model; a forge's receiver adds its headers and its secret check."""

    forge = "github"

    def __init__(self, settings: Settings, ledger: Ledger, queue: JobQueue) -> None:
        self._settings = settings
        self._ledger, self._queue = ledger, queue
        self._reads = CachedReads(ledger, ttl=settings.webhook_cache_seconds)
        self._replays = ReplayWindow(settings.replay_window_seconds)
        self._submit = ledger.submit_async if isinstance(ledger, LoopSubmit) else self._submit_in_thread

    async def _submit_in_thread(self, req: JobRequest) -> SubmitResult:
        return await asyncio.wrap_future(self._ledger.submit_nowait(req))

    def answer(self, event: str, status: int, body: dict[str, Any], started: float) -> Response:
        """The response to a delivery, counted in the metrics under this forge and `event` (a known one, or other)."""
        metrics.DELIVERIES.labels(event=event, outcome=str(body.get("action", status)), forge=self.forge).inc()
        metrics.ACCEPT_SECONDS.observe(time.perf_counter() - started)
        # 503: the ledger is unreachable (e.g. PostgreSQL restarting); nothing was recorded, so send it again.
        headers = {"Retry-After": RETRY_AFTER_SECONDS} if status == 503 else None
        # The bytes starlette's JSONResponse would send, rendered by orjson.
        return Response(orjson.dumps(body), status_code=status, headers=headers, media_type="application/json")

    def replayed(self, digest: bytes, delivery: str, dlog: FilteringBoundLogger) -> bool:
        """Whether the same body came lately under another delivery id (logged)."""
        if self._replays.replayed(digest, delivery):
            dlog.warning("replayed body ignored")
            return True
        return False

    async def record(
        self,
        event: str,
        delivery: str,
        payload: Payload,
        digest: bytes,
        dlog: FilteringBoundLogger,
        *,
        settings_for: SettingsFor,
        decide: Decide,
    ) -> tuple[int, dict[str, Any]]:
        """Decide on a verified, parsed delivery and record what it asks for; (status, body) of the answer."""
        try:
            settings = settings_for(event, payload, self._settings, self._reads)
        except Exception as exc:
            dlog.exception("could not read the ledger")
            raise Rejected(503, "could not read the job ledger; redeliver it from the webhook's settings") from exc
        try:
            decision = decide(event, payload, settings, delivery_id=delivery)
        except Exception as exc:  # a payload shape we did not foresee is the sender's problem, not a 500
            dlog.exception("could not decide on the delivery")
            raise Rejected(400, "payload could not be read") from exc
        dlog = dlog.bind(**decision.log_fields())
        try:
            decision = guard(decision, settings, self._reads)
            if decision.job is not None:
                decision = replace(decision, job=replace(decision.job, body_digest=digest.hex()))
            answer = await self._apply(decision)
        except Exception as exc:
            dlog.exception("could not record the delivery")
            raise Rejected(503, "could not record the job; redeliver it from the webhook's settings") from exc
        if answer is REPLAYED:  # another replica recorded this body's job under another delivery id
            dlog.warning("replayed body ignored", recorded_by="ledger")
            return 200, REPLAYED
        dlog.info("delivery accepted", reason=decision.reason, **answer)
        return 202, {"action": decision.action, "reason": decision.reason, **answer}

    async def _apply(self, decision: Decision) -> dict[str, Any]:
        if decision.job is not None:
            result = await self._submit(decision.job)
            if result.replayed:
                return REPLAYED
            if decision.pr_event is not None:  # a review that asks for a follow-up is recorded as a verdict too
                await asyncio.to_thread(self._ledger.record_pr_event, decision.pr_event)
            waiting = result.job.status == JobStatus.WAITING  # the issue's run works: folded into its next run
            if result.created and not waiting:
                self._queue.dispatch(result.job.id)
            return {"job_id": result.job.id, "created": result.created, "waiting": waiting}
        if (c := decision.cancel) is not None:
            jobs = await asyncio.to_thread(
                self._ledger.cancel,
                c.repo,
                c.issue,
                c.reason,
                installation_id=c.installation_id,  # the same path on the other forge is another repository
                on_pull_request=c.on_pull_request,
            )
            if decision.pr_event is not None:  # a closed merge request: its runs cancelled, its outcome recorded
                await asyncio.to_thread(self._ledger.record_pr_event, decision.pr_event)
            return {"cancelled": [j.id for j in jobs]}
        if decision.pr_event is not None:
            await asyncio.to_thread(self._ledger.record_pr_event, decision.pr_event)
            return {"recorded": decision.pr_event.kind}
        if decision.installation is not None:
            jobs = await asyncio.to_thread(self._ledger.record_installation, decision.installation)
            self._reads.forget()
            return {"cancelled": [j.id for j in jobs]}
        return {}


class WebhookReceiver(DeliveryRecorder):
    """GitHub's webhook route: the signature and GitHub's headers, then the shared recording path."""

    def __init__(self, settings: Settings, ledger: Ledger, queue: JobQueue) -> None:
        super().__init__(settings, ledger, queue)
        self._secret = settings.require_webhook_secret()

    async def handle(self, request: Request) -> Response:
        """Answer one delivery."""
        started = time.perf_counter()
        event = request.headers.get("x-github-event", "")
        delivery = request.headers.get("x-github-delivery", "")
        # A bound logger, not contextvars: the delivery's lines carry its ids without a bind/unbind per request.
        dlog = log.bind(delivery_id=delivery, github_event=event, forge=self.forge)
        try:
            status, body = await self._accept(request, event, delivery, dlog)
        except Rejected as exc:
            dlog.warning("delivery rejected", status=exc.status, reason=exc.message)
            status, body = exc.status, exc.body()
        known = event if event in ROUTES or event == "ping" else "other"
        return self.answer(known, status, body, started)

    async def _accept(
        self, request: Request, event: str, delivery: str, dlog: FilteringBoundLogger
    ) -> tuple[int, dict[str, Any]]:
        raw = await read_body(request)
        _check_signature(self._secret, raw, request.headers.get("x-hub-signature-256"))
        if not event or not delivery:
            raise Rejected(400, "missing X-GitHub-Event or X-GitHub-Delivery header")
        if not (event.isascii() and delivery.isascii() and len(delivery) <= MAX_DELIVERY_ID):
            raise Rejected(400, "malformed X-GitHub-Event or X-GitHub-Delivery header")
        payload = parse(raw)
        digest = hashlib.sha256(raw).digest()
        if self.replayed(digest, delivery, dlog):
            return 200, REPLAYED
        if event == "ping":
            dlog.info("ping", zen=payload.get("zen"))
            return 200, {"action": "pong"}
        return await self.record(event, delivery, payload, digest, dlog, settings_for=settings_for, decide=decide)
