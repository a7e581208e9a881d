"""The FastAPI app, composition only: POST /webhook (and Probot's path), POST /webhook/gitlab, /healthz, /metrics,
the /runs viewer."""

from __future__ import annotations

import asyncio
import functools
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from types import MappingProxyType
from typing import Any

import structlog
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry
from starlette.types import Receive, Scope, Send

from bot import metrics
from bot.gitlab.receive import GitLabReceiver
from bot.ledger import open_ledger
from bot.ledger.contract import Ledger
from bot.queue.dispatch import JobQueue, build_queue
from bot.settings import Settings
from bot.trajectory_store import TrajectoryStore, open_trajectories
from bot.web.pr_metrics import ClosedPrSource
from bot.web.viewer import register_viewer
from bot.webhooks.receive import WebhookReceiver
from bot.worker.health_server import readiness_answer
from bot.worker.pool import Worker, check_problem

GITHUB_PATHS = ("/webhook", "/api/github/webhooks")
GITLAB_PATH = "/webhook/gitlab"
WEBHOOK_PATHS = (*GITHUB_PATHS, GITLAB_PATH)
log = structlog.get_logger(__name__)


class App(FastAPI):
    """FastAPI, with a POST to a webhook path answered before its middleware stack and router: the handler
    reads the raw body and catches its own errors, and those layers cost a tenth of a delivery's CPU on the loop."""

    webhook_routes: Mapping[str, Callable[[Request], Awaitable[Response]]] = MappingProxyType({})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.webhook_routes.get(scope["path"]) if scope["type"] == "http" else None
        if handler and scope["method"] == "POST":
            response = await handler(Request(scope, receive))
            await response(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings,
    *,
    ledger: Ledger | None = None,
    queue: JobQueue | None = None,
    embedded_worker: Worker | None = None,
) -> FastAPI:
    """The App's HTTP side; refuses (SettingsError) to start without a real webhook secret for a forge it serves."""
    forges = settings.forges(webhooks_only=True)  # a forge's API credentials are its worker's business
    ledger, queue, owned = _ledger_and_queue(settings, ledger, queue, embedded_worker)
    lifespan = _lifespan(embedded_worker, owned)
    app = App(title="mini-fix", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    _add_webhook_routes(app, settings, ledger, queue, serves_github="github" in forges)
    _add_ops_routes(app, ledger, queue, embedded_worker)
    trajectories = open_trajectories(settings)  # PostgreSQL when scaled out: every worker's runs, from any replica
    register_viewer(app, settings, ledger, trajectories)
    _watch_gauges(settings, ledger, queue, trajectories)
    return app


def _ledger_and_queue(
    settings: Settings, ledger: Ledger | None, queue: JobQueue | None, worker: Worker | None
) -> tuple[Ledger, JobQueue, list[Ledger | JobQueue]]:
    """The ledger and queue given, else the embedded worker's, else opened here; the last list holds those opened
    here, which the app closes on shutdown."""
    if worker is not None:
        ledger, queue = ledger or worker.ledger, queue or worker.queue
    owned: list[Ledger | JobQueue] = []
    if ledger is None:
        ledger = open_ledger(settings)
        owned.append(ledger)
    if queue is None:
        queue = build_queue(settings)
        owned.append(queue)
    return ledger, queue, owned


def _lifespan(
    worker: Worker | None, owned: Sequence[Ledger | JobQueue]
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Start the embedded worker with the app; on shutdown stop it, then close what the app opened."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        _freeze_startup_heap()
        if worker is not None:
            worker.start()
        try:
            yield
        finally:
            # uvicorn re-raises SIGTERM after this returns: running jobs are requeued here or not at all.
            if worker is not None:
                await asyncio.to_thread(worker.stop)
            for resource in owned:
                resource.close()

    return lifespan


def _add_webhook_routes(app: App, settings: Settings, ledger: Ledger, queue: JobQueue, *, serves_github: bool) -> None:
    # GitHub's routes answer 404 in a GitLab-only deployment (no MINIFIX_WEBHOOK_SECRET to check a signature with).
    github = WebhookReceiver(settings, ledger, queue).handle if serves_github else _github_not_configured
    # GitLab's route answers 404 while MINIFIX_GITLAB_WEBHOOK_SECRET is unset: a hook pointed here says why.
    gitlab = GitLabReceiver(settings, ledger, queue).handle
    app.webhook_routes = {**dict.fromkeys(GITHUB_PATHS, github), GITLAB_PATH: gitlab}
    for path, handler in app.webhook_routes.items():
        # Also routed, for a root path set by a proxy and for the router's 405 to other methods.
        app.add_route(path, handler, methods=["POST"], include_in_schema=False)


def _add_ops_routes(app: FastAPI, ledger: Ledger, queue: JobQueue, worker: Worker | None) -> None:
    """/healthz, /readyz and /metrics, for the orchestrator's probes and Prometheus."""
    app.add_api_route("/healthz", _healthz(ledger, worker), methods=["GET"])
    app.add_api_route("/readyz", _readyz(ledger, queue, worker), methods=["GET"])
    app.add_api_route("/metrics", _metrics(metrics.fleet_registry(ledger.fleet)), methods=["GET"])


def _watch_gauges(settings: Settings, ledger: Ledger, queue: JobQueue, trajectories: TrajectoryStore) -> None:
    """The gauges read on each scrape: queue depth, data dir, PR outcomes."""
    metrics.watch_queue(queue.depth)
    metrics.watch_data_dir(settings.data_dir)
    metrics.watch_pr_outcomes(ClosedPrSource(ledger, trajectories))


GITHUB_NOT_CONFIGURED_HINT = (
    "set MINIFIX_WEBHOOK_SECRET (and MINIFIX_APP_ID, MINIFIX_PRIVATE_KEY) to serve a GitHub App; GitLab's hooks go "
    f"to {GITLAB_PATH}"
)


async def _github_not_configured(_request: Request) -> Response:
    """GitHub's webhook routes in a GitLab-only deployment: a hook pointed here says why nothing happens."""
    metrics.DELIVERIES.labels(event="other", outcome="404", forge="github").inc()
    log.warning("delivery rejected", forge="github", status=404, reason="GitHub is not configured")
    body = {"error": "GitHub is not configured on this mini-fix", "hint": GITHUB_NOT_CONFIGURED_HINT}
    return JSONResponse(body, status_code=404)


@functools.cache
def _freeze_startup_heap() -> None:
    # What is alive at startup (githubkit's and pydantic's many objects) lives as long as the process: keep it out
    # of the collector's sweeps, or each full collection stalls the event loop for ~100 ms. Once per process.
    gc.collect()
    gc.freeze()


def _healthz(ledger: Ledger, worker: Worker | None) -> Any:
    async def healthz() -> JSONResponse:
        """200 when the ledger answers."""
        try:
            await asyncio.to_thread(ledger.get, "healthz")
        except Exception as exc:
            return JSONResponse({"ok": False, "ledger": str(exc)}, status_code=503)
        return JSONResponse({"ok": True, "worker": worker is not None})

    return healthz


def _readyz(ledger: Ledger, queue: JobQueue, worker: Worker | None) -> Any:
    def problems() -> dict[str, str | None]:
        if worker is not None:  # the embedded worker's checks: warm-ups, ledger, queue, engine, sandbox image
            return worker.readiness()
        return {"ledger": check_problem(partial(ledger.get, "readyz")), "queue": check_problem(queue.depth)}

    async def readyz() -> JSONResponse:
        """200 once this process can do its work: ledger and queue answer (and its worker's engine and image)."""
        status, body = readiness_answer(await asyncio.to_thread(problems))
        return JSONResponse(body, status_code=status)

    return readyz


def _metrics(fleet: CollectorRegistry) -> Any:
    def metrics_page() -> Response:
        """This process's metrics and the fleet's gauges (a sync route: the ledger read runs in the threadpool)."""
        content, content_type = metrics.render(fleet)
        return Response(content, media_type=content_type)

    return metrics_page
