"""`mini-fix run`: the agent on a local checkout, in the sandbox, with no GitHub at all. The command line's side:
the flags fixed into a `LocalRun`, then its steps (`bot/pipeline/local.py`, `onhost.py`), each one's result printed."""

from __future__ import annotations

import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bot.agent.loop import StepEvent
from bot.pipeline import local, onhost
from bot.pipeline.runconfig import Flags, Settled
from bot.settings import Settings


@dataclass
class LocalRunRequest:
    """The arguments of `mini-fix run`."""

    repo: Path
    task: str
    config: list[str] = field(default_factory=list)  # --config specs, in order (files or key.path=value)
    model: str | None = None
    api_base: str | None = None
    image: str | None = None
    output: Path | None = None
    attempts: int | None = None  # None: MINIFIX_AGENT_ATTEMPTS

    def flags(self) -> Flags:
        """The flags as the run configuration takes them."""
        return Flags(tuple(self.config), self.model, self.api_base, self.image, self.attempts)

    def given(self) -> local.LocalGiven:
        """What the run is given, fixed once: a new run id, the output folder (`out/<run id>` by default)."""
        run_id = uuid.uuid4().hex[:12]
        output = self.output or Path("out") / run_id
        return local.LocalGiven(self.repo, self.task, self.flags(), output, run_id)


def print_step(event: StepEvent, attempt: int | None = None) -> None:
    """One progress line per model call (prefixed with the attempt when there are several)."""
    limit = f"/{event.step_limit}" if event.step_limit else ""
    tokens = event.prompt_tokens + event.completion_tokens
    prefix = f"[{attempt}] " if attempt is not None else ""
    if event.format_error:
        print(f"{prefix}step {event.step}{limit}  format error (no single command)  tokens {tokens}", flush=True)
        return
    command = (event.command or "").strip().replace("\n", " ⏎ ")
    command = command if len(command) <= 100 else command[:97] + "..."
    result = "refused (failed before)" if event.returncode is None else f"rc={event.returncode}"
    print(f"{prefix}step {event.step}{limit}  {result}  tokens {tokens}  $ {command}", flush=True)


def progress(count: int) -> local.Progress:
    """Printed progress: a line per step (with the attempt's number when there are several), per setup report, and
    per attempt's end when there are several."""
    several = count > 1
    return local.Progress(
        on_step=lambda k, event: print_step(event, attempt=k if several else None),
        on_end=lambda k, how: print(f"attempt {k}: {how}", flush=True) if several else None,
        on_setup=lambda summary: print(f"setup: {summary}", flush=True),
    )


def run_local(request: LocalRunRequest, settings: Settings) -> int:
    """Run the agent on `request.repo` in fresh sandboxes (`--attempts` of them); 0 when one submitted a change."""
    run = local.LocalRun(request.given(), settings)
    try:
        ready = run.configured()
    except local.Refused as exc:
        print(f"mini-fix: {exc}", file=sys.stderr)
        return 2
    given, count = run.given, ready.settled.config.attempts
    print_ready(given, ready.settled)
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-{given.run_id}-") as scratch:
        judgement = onhost.attempted(run.driver(ready, progress(count)), Path(scratch)).judgement
    written = local.written(judgement, given.output, count)
    for line in written.out:
        print(line)
    for line in written.err:
        print(line, file=sys.stderr)
    return written.code


def print_ready(given: local.LocalGiven, settled: Settled) -> None:
    """What the run settled, before anything starts: the tests and setup and why, the notes, the model, the output."""
    resolved, testing, count = settled.config, settled.testing, settled.config.attempts
    print(f"tests: {f'`{testing.command}`' if testing.command else 'none'} ({testing.why})")
    print(f"setup: {settled.setup.describe()}")
    for line in resolved.notes:
        print(f"mini-fix: note: {line}", file=sys.stderr)
    where = resolved.model.api_base or "default endpoint"
    print(f"run {given.run_id}: model {resolved.model.model_name} at {where}, profile {resolved.profile}; "
          f"output {given.output}")  # fmt: skip
    if count > 1:
        print(f"{count} attempts in parallel; each one's files go in {given.output}/{given.run_id}-<k>/")
