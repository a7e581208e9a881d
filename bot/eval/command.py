"""`mini-fix eval TASKS`: wire the App's config, model and sandbox to the harness, then write the report."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bot.agent.config import DEFAULT_CONFIG_PATH, MiniFixAgentConfig, ModelConfig, load_config
from bot.agent.model_base import Model
from bot.eval.harness import run_tasks
from bot.eval.solve import EvalContext
from bot.eval.store import OutputInUse, ResultStore, config_digest
from bot.eval.tasks import TaskError, load_tasks
from bot.pipeline.run import resolve_model_config
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig


@dataclass
class EvalRequest:
    """The arguments of `mini-fix eval TASKS`."""

    tasks: Path
    output: Path
    workers: int = 1
    model: str | None = None
    api_base: str | None = None
    config: Path | None = None
    image: str | None = None
    attempts: int | None = None
    attempt_workers: int | None = None


def load_agent_config(settings: Settings, config: Path | None) -> MiniFixAgentConfig:
    """The App's agent config with a --config file laid over it."""
    overrides: dict[str, Any] = {}
    if config is not None:
        overrides = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    loaded = load_config(settings.agent_config or DEFAULT_CONFIG_PATH, overrides)
    for warning in loaded.warnings:
        print(f"warning: config key ignored: {warning}", file=sys.stderr)
    return loaded


def eval_context(request: EvalRequest, settings: Settings) -> EvalContext:
    """The real collaborators: litellm and the Docker sandbox, as the App's worker uses them."""
    if request.image:
        settings = settings.model_copy(update={"sandbox_image": request.image})
    config = load_agent_config(settings, request.config)
    flags = {"model_name": request.model, "api_base": request.api_base}
    model_config = resolve_model_config(config, settings).model_copy(update={k: v for k, v in flags.items() if v})
    api_key = settings.model_api_key.get_secret_value() if settings.model_api_key else None

    def model(cfg: ModelConfig) -> Model:
        from bot.agent.model import LitellmModel

        return LitellmModel(cfg, api_key=api_key)

    def sandbox(cfg: SandboxConfig, run_id: str) -> Sandbox:
        from sandbox.docker import DockerSandbox

        return DockerSandbox.start(cfg, run_id, labels={"mini-fix.eval": "1"})

    return EvalContext(
        settings,
        config,
        model_config,
        model,
        sandbox,
        request.output,
        threading.Event(),
        request.attempts,
        request.attempt_workers,
    )


def run_eval(request: EvalRequest, ctx: EvalContext) -> int:
    """Run the tasks file into the output directory; 0 when every task ran (resolved or not)."""
    try:
        tasks, bad = load_tasks(request.tasks)
    except TaskError as exc:
        print(f"mini-fix: {exc}", file=sys.stderr)
        return 2
    for where, why in bad:
        print(f"warning: {where}: not a task: {why}", file=sys.stderr)
    store = ResultStore(request.output)
    name = ctx.model_config.model_name
    identity: dict[str, Any] = {"model": name, "config_digest": config_digest(ctx.agent_config.model_dump(mode="json"))}
    if ctx.attempts:
        identity["attempts"] = ctx.attempts  # a directory holds results of one number of attempts
    try:
        store.claim(identity)
    except OutputInUse as exc:
        print(f"mini-fix: {exc}", file=sys.stderr)
        return 2
    each = f", {ctx.attempts} attempt(s) each" if ctx.attempts else ""
    if ctx.attempts and ctx.attempt_workers:
        each += f" ({min(ctx.attempt_workers, ctx.attempts)} at a time)"
    print(
        f"eval: {len(tasks)} task(s){each}, model {name}, {request.workers} worker(s), output {request.output}",
        flush=True,
    )
    try:
        run_tasks(tasks, ctx, store, request.workers, lambda line: print(line, flush=True))
    finally:
        report = store.write_report(tasks, name, bad)
    oracle = f"; any attempt resolved {report['any_resolved']}" if "any_resolved" in report else ""
    print(
        f"resolved {report['resolved']}/{report['total']}{oracle} ({report['errors']} error(s)); "
        f"report {request.output / 'report.json'}, predictions {request.output / 'predictions.jsonl'}"
    )
    return 0 if report["finished"] == report["total"] else 1
