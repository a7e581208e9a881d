"""`mini-fix eval TASKS`: the shared runtime and run configuration wired to the harness, then the report."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.eval.harness import run_tasks
from bot.eval.solve import EvalContext
from bot.eval.store import OutputInUse, ResultStore, config_digest
from bot.eval.tasks import TaskError, load_tasks
from bot.pipeline.runconfig import Flags, resolve
from bot.pipeline.runtime import Runtime, print_ignored
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings


@dataclass
class EvalRequest:
    """The arguments of `mini-fix eval TASKS`."""

    tasks: Path
    output: Path
    workers: int = 1
    model: str | None = None
    api_base: str | None = None
    config: list[str] = field(default_factory=list)  # -c specs, in order (files or key.path=value)
    image: str | None = None
    attempts: int | None = None
    attempt_workers: int | None = None

    def flags(self) -> Flags:
        """The flags as the run configuration takes them (`--image` over every task's image, as in `mini-fix run`)."""
        return Flags(config=tuple(self.config), model=self.model, api_base=self.api_base, image=self.image)


def eval_context(request: EvalRequest, settings: Settings) -> EvalContext:
    """The shared runtime (litellm, Docker sandboxes labelled `mini-fix.eval`) and the agent config."""
    runtime = Runtime(settings)
    agent_file = runtime.agent_file(request.config)
    print_ignored(agent_file)
    flags = request.flags()
    return EvalContext(
        settings,
        agent_file,
        resolve(settings, agent_file, RepoConfig(), flags, ceilings=False).model,
        runtime.model,
        runtime.sandboxes({"mini-fix.eval": "1"}),
        request.output,
        threading.Event(),
        request.attempts,
        request.attempt_workers,
        flags=flags,
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
