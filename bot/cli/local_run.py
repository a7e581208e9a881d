"""`mini-fix run`: the agent on a local checkout, in the sandbox, with no GitHub at all."""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bot import metrics
from bot.agent import profiles
from bot.agent.config import (
    DEFAULT_CONFIG_PATH,
    MiniFixAgentConfig,
    ModelConfig,
    load_config,
    load_specs,
    missing_api_base,
)
from bot.agent.loop import StepEvent
from bot.eval.hostgit import GitFailed, base_checkout, git
from bot.eval.quarantine import quarantined
from bot.pipeline.admit import agent_config_for, sandbox_config_for, setup_networked
from bot.pipeline.attempts import Attempt, AttemptPlan, started
from bot.pipeline.candidates import Choice
from bot.pipeline.capacity import JobBudget
from bot.pipeline.ceilings import clamp
from bot.pipeline.change import ChangeCaps
from bot.pipeline.choose import attempts_table, choose
from bot.pipeline.execute import SANDBOX_FAILURES
from bot.pipeline.exits import SUBMITTED, exit_for
from bot.pipeline.run import resolve_model_config
from bot.pipeline.setup_cache import RepoSetup, SetupOptions
from bot.pipeline.verdicts import record_verdicts, refuse
from bot.pipeline.verify import verify
from bot.repo_config import infer
from bot.repo_config.load import ConfigError, load_repo_config
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig

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


def agent_config(request: LocalRunRequest, settings: Settings) -> MiniFixAgentConfig:
    """mini-swe-agent's `-c`: the --config specs merged in order replace our default; without any, the model's
    profile (MINIFIX_MODEL_PROFILES), else the default."""
    if request.config:
        config = load_specs([str(spec) for spec in request.config])
    else:
        default = load_config(settings.agent_config or DEFAULT_CONFIG_PATH)
        name = request.model or default.model.model_name or settings.model
        config = profiles.resolve(name, settings.model_profiles, default)
    for warning in config.warnings:
        print(f"warning: config key ignored: {warning}", file=sys.stderr)
    return config


def model_config(config: MiniFixAgentConfig, request: LocalRunRequest, settings: Settings) -> ModelConfig:
    """Flag, then config file, then deployment setting."""
    flags = {"model_name": request.model, "api_base": request.api_base}
    return resolve_model_config(config, settings).model_copy(update={k: v for k, v in flags.items() if v})


def sandbox_config(
    config: MiniFixAgentConfig, request: LocalRunRequest, settings: Settings, repo: RepoConfig | None = None
) -> SandboxConfig:
    """The App's container for this (clamped) repository config and agent config; --image wins over both."""
    sandbox = sandbox_config_for(config, settings, repo or RepoConfig())
    return sandbox.model_copy(update={"image": request.image}) if request.image else sandbox


def as_the_app_would(
    config: MiniFixAgentConfig, repo: RepoConfig, settings: Settings
) -> tuple[MiniFixAgentConfig, RepoConfig, list[str]]:
    """The checkout's `.github/mini-fix.yml` held to this deployment's ceilings (a note per clamp) and laid over the
    agent config (its limits, model and image), through the App's own functions: a local run rehearses a job."""
    clamped, notes = clamp(repo, settings)
    return agent_config_for(config, settings, clamped), clamped, notes


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
    except GitFailed as exc:
        if "not a git repository" in str(exc):
            return f"--repo {repo} is not a git checkout: run `git init` there first"
        return f"--repo {repo} has no commit yet: the change is diffed against HEAD"
    return None


def own_checkout(repo: Path, dest: Path) -> Path:
    """A clean clone of `repo`'s HEAD made by the worker's git: the run's checkout, so nothing in the given
    directory's `.git` (config, hooks, filters) is used by the host's git (uncommitted changes are not taken)."""
    with quarantined(repo) as git_dir:
        head = git(["rev-parse", "--verify", "HEAD^{commit}"], git_dir=git_dir).strip()
    base_checkout(str(repo), head, dest)
    return dest


def attempt_count(request: LocalRunRequest, settings: Settings, repo: RepoConfig | None = None) -> tuple[int, str]:
    """`--attempts`, else the repository's (clamped) `attempts:`, else MINIFIX_AGENT_ATTEMPTS, within
    MINIFIX_MAX_AGENT_ATTEMPTS as the App clamps a repository's; and the note saying so when lowered ('' when not)."""
    configured = repo.attempts if repo is not None else None
    asked = max(1, request.attempts or configured or settings.agent_attempts)
    top = max(1, settings.max_agent_attempts)
    if asked <= top:
        return asked, ""
    flag = f"--attempts {asked}" if request.attempts else f"MINIFIX_AGENT_ATTEMPTS={asked}"
    return top, f"`{flag}` is above this deployment's ceiling (MINIFIX_MAX_AGENT_ATTEMPTS); used {top}"


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
    config, repo, clamped = as_the_app_would(agent_config(request, settings), repo, settings)
    model = model_config(config, request, settings)
    if problem := missing_api_base(model):
        hint = "pass --api-base http://HOST:PORT/v1 (scripts/ensure-model.sh start prints one for a CPU model)"
        print(f"mini-fix: {problem}: {hint}", file=sys.stderr)
        return 2
    count, note = attempt_count(request, settings, repo)
    for line in [*clamped, note]:
        if line:
            print(f"mini-fix: note: {line}", file=sys.stderr)
    where = model.api_base or "default endpoint"
    print(f"run {run_id}: model {model.model_name} at {where}, profile {config.profile}; output {output}")
    if count > 1:
        print(f"{count} attempts in parallel; each one's files go in {output}/{run_id}-<k>/")
    stop = threading.Event()
    plan = _attempt_plan(request, settings, config, model, repo, run_id, output, count, stop)
    plan.testing = testing.template_vars()
    runs, choice = _run_attempts(request, settings, plan, stop)
    return _write(runs, choice, output, count)  # a sandbox that fails ends its attempt: exit 3 when none ran


def _run_attempts(
    request: LocalRunRequest, settings: Settings, plan: AttemptPlan, stop: threading.Event
) -> tuple[list[Attempt], Choice]:
    """The App's own attempts path: parallel attempts, the change taken out by the host, verified, chosen."""
    repo, run_id = plan.config, plan.run_id
    with tempfile.TemporaryDirectory(prefix=f"mini-fix-{run_id}-") as tmp, started(plan) as attempts:
        checkout = own_checkout(request.repo, Path(tmp) / "own-checkout")
        runs = attempts.run(request.task, checkout, Path(tmp), settings.secrets)
        candidates = [run.candidate for run in runs]
        for candidate in candidates:
            refuse(candidate, repo, settings.secrets)
        verify(
            candidates,
            checkout=checkout,
            factory=plan.factory,
            sandbox_config=plan.sandbox_config,
            repo=repo,
            run_id=run_id,
            workdir=Path(tmp),
            cancel=stop,
        )
        choice = choose(candidates)
        record_verdicts(runs, choice, settings.secrets, None)
    return runs, choice


def _attempt_plan(
    request: LocalRunRequest,
    settings: Settings,
    config: MiniFixAgentConfig,
    model: ModelConfig,
    repo: RepoConfig,
    run_id: str,
    output: Path,
    count: int,
    stop: threading.Event,
) -> AttemptPlan:
    """The attempts of one local run: Docker sandboxes, the litellm model, output under `output`, printed steps."""
    from bot.agent.model import LitellmModel
    from sandbox.docker import DockerSandbox

    api_key = settings.model_api_key.get_secret_value() if settings.model_api_key else None

    def start(sandbox: SandboxConfig, sandbox_run_id: str) -> Sandbox:
        return DockerSandbox.start(sandbox, sandbox_run_id, on_exec=metrics.SANDBOX_EXEC_SECONDS.observe)

    setup = RepoSetup(str(request.repo.resolve()), SetupOptions.from_settings(settings), on_report=_said)
    return AttemptPlan(
        count=count,
        run_id=run_id,
        factory=setup.bind(start),  # the App's setup time limit and cache, for the attempts and verify alike
        sandbox_config=sandbox_config(config, request, settings, repo),
        agent=config,
        model=model,
        make_model=lambda m: LitellmModel(m, api_key=api_key),
        config=repo,
        networked=setup_networked(repo, settings),
        max_export_bytes=settings.max_export_bytes,
        caps=ChangeCaps(settings.max_changed_files, settings.max_changed_bytes),
        trajectory_path=lambda rid: output / "trajectory.json" if rid == run_id else output / rid / "trajectory.json",
        meta={"repo": str(request.repo.resolve()), "profile": config.profile},
        budget=JobBudget(tokens=settings.max_tokens, seconds=settings.max_wall_time, cancel=stop),
        on_step=lambda k, event: print_step(event, attempt=k if count > 1 else None),
        on_end=lambda k, how: print(f"attempt {k}: {how}", flush=True) if count > 1 else None,
    )


def _said(summary: str) -> None:
    print(f"setup: {summary}", flush=True)


def _write(runs: list[Attempt], choice: Choice, output: Path, count: int) -> int:
    """patch.diff (the chosen change) and, with several attempts, each attempt's patch and attempts.md."""
    output.mkdir(parents=True, exist_ok=True)
    chosen = next((run for run in runs if run.candidate is choice.chosen), None)
    if count > 1:
        for run in runs:
            change = run.candidate.change
            place = output / run.candidate.run_id
            place.mkdir(parents=True, exist_ok=True)
            (place / "patch.diff").write_text(change.diff if change else "")
        links = {run.candidate.index: str(run.trajectory) if run.trajectory else None for run in runs}
        (output / "attempts.md").write_text(attempts_table(choice, [run.candidate for run in runs], links))
        if chosen is not None and chosen.trajectory is not None:
            shutil.copyfile(chosen.trajectory, output / "trajectory.json")
    diff = chosen.candidate.change.diff if chosen is not None and chosen.candidate.change else ""
    (output / "patch.diff").write_text(diff)
    if count > 1:
        for run in runs:
            print(f"attempt {run.candidate.index}: {choice.reasons.get(run.candidate.index, '')}")
    return _summarise(chosen or runs[0], diff, output, chosen=chosen is not None, count=count)


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
