"""The trajectory viewer: GET /runs (operator), GET /runs/{id} and /runs/{id}/trajectory.json (signed links).

Pages are rendered on the server from prompts/viewer/*.html with autoescaping on: everything in a trajectory
(model output, command output, issue text) is untrusted HTML. No scripts, no external assets.
"""

from __future__ import annotations

import hmac
import json
from datetime import datetime
from functools import cache
from typing import Any

import jinja2
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from bot.github.urls import web_url
from bot.jobs import Job
from bot.ledger.contract import Ledger
from bot.ledger.pr_outcomes import describe, pull_of
from bot.pipeline.publish.transcript import steps_from_messages
from bot.render import PROMPTS_DIR, duration, thousands
from bot.settings import Settings
from bot.signing import check_link, run_query, valid_run_id
from bot.trajectory_store import TrajectoryStore, open_trajectories

MAX_LISTED = 100
NO_STORE = {"Cache-Control": "no-store", "X-Robots-Tag": "noindex", "Referrer-Policy": "no-referrer"}
# No scripts, no remote anything: a page that cannot run code even if escaping ever failed.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


@cache
def templates() -> jinja2.Environment:
    """The viewer's templates, autoescaped."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPTS_DIR / "viewer"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(duration=duration, thousands=thousands)
    return env


class Viewer:
    """The viewer's routes over one trajectory store and ledger."""

    def __init__(self, settings: Settings, ledger: Ledger, store: TrajectoryStore | None = None) -> None:
        self.settings, self.ledger = settings, ledger
        self.store = store or open_trajectories(settings)

    def register(self, app: FastAPI) -> None:
        """Add the three routes to `app`."""
        app.add_api_route("/runs", self.list_runs, methods=["GET"], response_class=HTMLResponse)
        app.add_api_route("/runs/{run_id}", self.run_page, methods=["GET"], response_class=HTMLResponse)
        app.add_api_route("/runs/{run_id}/trajectory.json", self.run_json, methods=["GET"])

    def list_runs(self, request: Request) -> HTMLResponse:
        """Every recent run, newest first (operator token only)."""
        if self.settings.operator_token is None:
            raise HTTPException(404, "the run list is off: set MINIFIX_OPERATOR_TOKEN to turn it on")
        if not self._is_operator(request):
            raise HTTPException(401, "operator token required", headers={"WWW-Authenticate": "Bearer"})
        outcomes = self.ledger.pr_outcomes()
        rows = [self._row(run_id, outcomes) for run_id in self.store.recent(MAX_LISTED)]
        github = web_url(self.settings.github_api_url)
        return self._page("runs.html", runs=[r for r in rows if r is not None], github=github)

    def run_page(self, run_id: str, request: Request) -> HTMLResponse:
        """One run, step by step."""
        data = _parse(self._authorised_text(run_id, request))
        if data is None:
            raise HTTPException(404, "this run's trajectory cannot be read")
        meta = data.get("mini_fix") or {}
        job = self._job(meta)
        messages = data.get("messages") or []
        variables = {
            "run_id": run_id,
            "meta": meta,
            "info": data.get("info") or {},
            "job": job,
            "task": _task(messages),
            "steps": steps_from_messages(messages),
            "github": web_url(self.settings.github_api_url),
            "json_url": f"/runs/{run_id}/trajectory.json?{run_query(self.settings, run_id)}",
        }
        return self._page("run.html", **variables)

    def run_json(self, run_id: str, request: Request) -> Response:
        """The trajectory file itself (mini-swe-agent's format)."""
        text = self._authorised_text(run_id, request)
        return Response(text, media_type="application/json", headers=NO_STORE)

    def _authorised_text(self, run_id: str, request: Request) -> str:
        if not valid_run_id(run_id):
            raise HTTPException(404, "no such run")
        text = cache(lambda: self.store.load(run_id))  # read once; a v0 link needs the run's start
        signed = check_link(self.settings, run_id, request.query_params, lambda: _started(text()))
        if not signed and not self._is_operator(request):
            raise HTTPException(
                403, "this link is not signed for this run or has expired; use the link mini-fix posted on GitHub"
            )
        if (found := text()) is None:
            raise HTTPException(404, "no such run")
        return found

    def _is_operator(self, request: Request) -> bool:
        if self.settings.operator_token is None:
            return False
        expected = self.settings.operator_token.get_secret_value()
        header = request.headers.get("authorization", "")
        # Only in a header: a token in the URL ends up in proxies' logs, browser history and Referer headers.
        given = header[7:] if header.lower().startswith("bearer ") else ""
        return bool(expected and given) and hmac.compare_digest(given.encode(), expected.encode())

    def _row(self, run_id: str, outcomes: dict[tuple[str, int], dict[str, Any]]) -> dict[str, Any] | None:
        data = _parse(self.store.load(run_id))
        if data is None:
            return None
        meta = data.get("mini_fix") or {}
        job = self._job(meta)
        return {
            "run_id": run_id,
            "url": f"/runs/{run_id}?{run_query(self.settings, run_id)}",
            "meta": meta,
            "exit_status": (data.get("info") or {}).get("exit_status") or "",
            "status": job.status.value if job else ("finished" if meta.get("finished_at") else "in progress"),
            "pr_url": job.pr_url if job else None,
            "outcome": _outcome(job, outcomes),
        }

    def _job(self, meta: dict[str, Any]) -> Job | None:
        job_id = meta.get("job_id")
        return self.ledger.get(str(job_id)) if job_id else None

    def _page(self, template: str, **variables: Any) -> HTMLResponse:
        html = templates().get_template(template).render(**variables)
        return HTMLResponse(html, headers={**NO_STORE, "Content-Security-Policy": CSP})


def _started(text: str | None) -> float | None:
    """When the run began (its trajectory's `mini_fix.started_at`), unix seconds; None when unknown."""
    block = (_parse(text) or {}).get("mini_fix")
    started = block.get("started_at") if isinstance(block, dict) else None
    try:
        return datetime.fromisoformat(started).timestamp() if isinstance(started, str) else None
    except ValueError:
        return None


def _parse(text: str | None) -> dict[str, Any] | None:
    try:
        data = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _outcome(job: Job | None, outcomes: dict[tuple[str, int], dict[str, Any]]) -> str:
    """What happened to the run's PR since (merged, closed, human pushes, reviews), or ''."""
    pull = pull_of(job.pr_url) if job else None
    outcome = outcomes.get((job.repo, pull)) if job and pull is not None else None
    return describe(outcome) if outcome else ""


def _task(messages: list[Any]) -> str:
    """The first user message: the task as the agent saw it."""
    first = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    return str(first.get("content") or "") if first else ""


def register_viewer(app: FastAPI, settings: Settings, ledger: Ledger, store: TrajectoryStore | None = None) -> None:
    """Serve the viewer's routes on `app`."""
    Viewer(settings, ledger, store).register(app)
