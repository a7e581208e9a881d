"""`mini-fix run`: the agent on a local checkout, in the sandbox, with no GitHub at all."""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bot.agent.config import missing_api_base
from bot.agent.loop import StepEvent
from bot.pipeline import runconfig
from bot.pipeline.attempts.engine import started
from bot.pipeline.attempts.execute import SANDBOX_FAILURES
from bot.pipeline.attempts.exits import SUBMITTED, exit_for
from bot.pipeline.attempts.plan import Attempt, AttemptPlan
from bot.pipeline.attempts.setup_cache import RepoSetup, SetupOptions
from bot.pipeline.git.gitops import GitError
from bot.pipeline.git.hostgit import git, head_checkout
from bot.pipeline.git.quarantine import quarantined
from bot.pipeline.judge.judgement import Checks, Judgement, judge
from bot.pipeline.publish.prtext import attempts_table
from bot.pipeline.runconfig import Flags, RunConfig, with_setup
from bot.pipeline.runtime import Runtime, print_ignored
from bot.repo_config import infer
from bot.repo_config.load import ConfigError, load_repo_config
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings

SANDBOX_OUTCOMES = {outcome for _, outcome in SANDBOX_FAILURES}


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


def run_config(request: LocalRunRequest, repo: RepoConfig, settings: Settings) -> RunConfig:
    """The run configured as the App would configure the job (runconfig.resolve): the checkout's
    `.github/mini-fix.yml` within this deployment's ceilings, the flags over everything, `-c` replacing our file."""
    flags = request.flags()
    agent_file = runconfig.agent_file(settings, flags.config)
    print_ignored(agent_file)
    return runconfig.resolve(settings, agent_file, repo, flags)


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


def check_checkout(repo: Path) -> str | None:
    """Why `repo` can't be used, or None (read through a quarantine: the checkout's own git config never runs)."""
    if not repo.is_dir():
        return f"--repo {repo} is not a directory"
    try:
        with quarantined(repo) as git_dir:
            git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], git_dir=git_dir)
    except GitError as exc:
        if "not a git repository" in str(exc):
            return f"--repo {repo} is not a git checkout: run `git init` there first"
        return f"--repo {repo} has no commit yet: the change is diffed against HEAD"
    return None


def repo_config(repo: Path) -> RepoConfig:
    """The checkout's own `.github/mini-fix.yml` (its `test`, `reproduce`, `setup`, ... judge the attempts)."""
    local = "local/checkout"

    def read(target: str, path: str) -> str | None:
        file = repo / path
        return file.read_text(encoding="utf-8") if target == local and file.is_file() else None

    return load_repo_config(local, read).config


def run_local(request: LocalRunRequest, settings: Settings) -> int:
    """Run the agent on `request.repo` in fresh sandboxes (`--attempts` of them); 0 when one submitted a change."""
    if problem := check_checkout(request.repo):
        print(f"mini-fix: {problem}", file=sys.stderr)
        return 2
    try:
        repo = repo_config(request.repo)
    except ConfigError as exc:
        print(f"mini-fix: {exc}", file=sys.stderr)
        return 2
    repo, testing = infer.resolve(repo, request.repo)
    print(f"tests: {f'`{testing.command}`' if testing.command else 'none'} ({testing.why})")
    run_id = uuid.uuid4().hex[:12]
    output = request.output or Path("out") / run_id
    resolved, setup = with_setup(run_config(request, repo, settings), request.repo, settings)
    print(f"setup: {setup.describe()}")
    model, count = resolved.model, resolved.attempts
    if problem := missing_api_base(model):
        hint = "pass --api-base http://HOST:PORT/v1 (scripts/ensure-model.sh start prints one for a CPU model)"
        print(f"mini-fix: {problem}: {hint}", file=sys.stderr)
        return 2
    for line in resolved.notes:
        print(f"mini-fix: note: {line}", file=sys.stderr)
    where = model.api_base or "default endpoint"
    print(f"run {run_id}: model {model.model_name} at {where}, profile {resolved.profile}; output {output}")
    if count > 1:
        print(f"{count} attempts in parallel; each one's files go in {output}/{run_id}-<k>/")
    plan = _attempt_plan(str(request.repo.resolve()), settings, resolved, testing, run_id, output)
    judgement = _run_attempts(request.repo, request.task, settings.secrets, plan)
    return _write(judgement, output, count)  # a sandbox that fails ends its attempt: exit 3 when none ran


def _run_attempts(repo: Path, task: str, secrets: list[str], plan: AttemptPlan) -> Judgement:
    """The App's own engine and judge: parallel attempts on a clean clone of the checkout's HEAD (the worker's git:
    `head_checkout`), the change taken out by the host, verified, chosen."""
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-{plan.run_id}-") as tmp, started(plan) as attempts:
        checkout = head_checkout(repo, Path(tmp) / "own-checkout")
        runs = attempts.run(task, checkout, Path(tmp), secrets)
        return judge(runs, Checks.of(plan, checkout, Path(tmp)), secrets=secrets)


def _attempt_plan(
    name: str,
    settings: Settings,
    resolved: RunConfig,
    testing: infer.TestPlan,
    run_id: str,
    output: Path,
) -> AttemptPlan:
    """The attempts of one local run: the shared runtime, output under `output`, printed steps (an inferred setup's
    failure is printed and the run goes on: the plan's `setup_tolerant`); `name`: the checkout's resolved path."""
    runtime, count = Runtime(settings), resolved.attempts
    options = SetupOptions.from_settings(settings)
    setup = RepoSetup(name, options, on_report=_said, trust_clean_trees=True)
    return AttemptPlan.of(
        resolved,
        (resolved.repo, testing),  # the checkout's tests, inferred before the configuration was resolved
        run_id=run_id,
        factory=setup.bind(runtime.sandboxes()),  # the App's setup time limit and cache, for attempts and verify
        make_model=runtime.model,
        trajectory_path=lambda rid: output / "trajectory.json" if rid == run_id else output / rid / "trajectory.json",
        meta={"repo": name, "profile": resolved.profile},
        cancel=threading.Event(),  # nothing stops a local run but ^C
        on_step=lambda k, event: print_step(event, attempt=k if count > 1 else None),
        on_end=lambda k, how: print(f"attempt {k}: {how}", flush=True) if count > 1 else None,
    )


def _said(summary: str) -> None:
    print(f"setup: {summary}", flush=True)


def _write(judgement: Judgement, output: Path, count: int) -> int:
    """patch.diff (the chosen change) and, with several attempts, each attempt's patch and attempts.md; the summary
    printed, and the exit code."""
    output.mkdir(parents=True, exist_ok=True)
    runs, choice = judgement.attempts, judgement.choice
    chosen = next((run for run in runs if run.candidate is choice.chosen), None)
    if count > 1:
        for run in runs:
            change = run.candidate.change
            place = output / run.candidate.run_id
            place.mkdir(parents=True, exist_ok=True)
            (place / "patch.diff").write_text(change.diff if change else "")
        if chosen is not None and chosen.trajectory is not None:
            shutil.copyfile(chosen.trajectory, output / "trajectory.json")
    diff = chosen.candidate.change.diff if chosen is not None and chosen.candidate.change else ""
    (output / "patch.diff").write_text(diff)
    if count > 1:
        for run in runs:
            print(f"attempt {run.candidate.index}: {choice.reasons.get(run.candidate.index, '')}")
    code = _summarise(chosen or runs[0], diff, output, chosen=chosen is not None, count=count)
    if count > 1:  # last: the summary names attempts.md, written before this returns
        links = {run.candidate.index: str(run.trajectory) if run.trajectory else None for run in runs}
        (output / "attempts.md").write_text(attempts_table(choice, judgement.candidates, links))
    return code


def _summarise(run: Attempt, diff: str, output: Path, *, chosen: bool, count: int) -> int:
    result = run.result
    if result is not None:
        tokens = result.prompt_tokens + result.completion_tokens
        files = sum(1 for line in diff.splitlines() if line.startswith("diff --git"))
        print(
            f"{result.exit_status}: {result.steps} steps, {tokens} tokens, {result.elapsed_seconds:.1f}s, "
            f"{files} file(s) changed; trajectory {output / 'trajectory.json'}, patch {output / 'patch.diff'}"
        )
    if chosen:
        return 0
    if count > 1:
        print(f"mini-fix: none of the {count} attempts left a change to propose (see {output / 'attempts.md'})")
        return 1
    if result is not None and result.exit_status == SUBMITTED:  # submitted, as the contract says: exit 0
        refused = f": it touches {', '.join(run.candidate.refused)}" if run.candidate.refused else ""
        print(f"mini-fix: submitted, but there is no change to propose{refused}", file=sys.stderr)
        return 0
    if result is None:
        failure = run.failure
        detail = (failure.detail or str(failure.outcome)) if failure else "the agent did not run"
        sandbox = failure is not None and failure.outcome in SANDBOX_OUTCOMES
        print(f"mini-fix: {'sandbox failed' if sandbox else 'the agent did not run'}: {detail}", file=sys.stderr)
        return 3 if sandbox else 1
    detail = str(result.messages[-1].get("content", "")) if result.messages else ""
    hint = exit_for(result.exit_status).hint
    print(f"mini-fix: not submitted ({result.exit_status}): {hint}", file=sys.stderr)
    if detail and detail != result.exit_status:
        print(f"  {detail}", file=sys.stderr)
    return 1
