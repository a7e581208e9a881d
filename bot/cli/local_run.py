"""`mini-fix run`: the agent on a local checkout, in the sandbox, with no GitHub at all."""

from __future__ import annotations

import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bot import metrics
from bot.agent.config import DEFAULT_CONFIG_PATH, MiniFixAgentConfig, ModelConfig, load_config
from bot.agent.loop import Agent, AgentResult, StepEvent
from bot.pipeline.admit import deployment_sandbox
from bot.pipeline.exits import SUBMITTED, exit_for
from bot.pipeline.gitops import repo_files
from bot.pipeline.run import resolve_model_config
from bot.settings import Settings
from bot.trajectory import TrajectoryWriter
from sandbox.base import SandboxConfig, SandboxError


@dataclass
class LocalRunRequest:
    """The arguments of `mini-fix run`."""

    repo: Path
    task: str
    config: Path | None = None
    model: str | None = None
    api_base: str | None = None
    image: str | None = None
    output: Path | None = None


def agent_config(request: LocalRunRequest, settings: Settings) -> MiniFixAgentConfig:
    """Our defaults, the --config file laid over them, then the command-line flags."""
    overrides: dict[str, Any] = {}
    if request.config is not None:
        overrides = yaml.safe_load(request.config.read_text(encoding="utf-8")) or {}
    config = load_config(settings.agent_config or DEFAULT_CONFIG_PATH, overrides)
    for warning in config.warnings:
        print(f"warning: config key ignored: {warning}", file=sys.stderr)
    return config


def model_config(config: MiniFixAgentConfig, request: LocalRunRequest, settings: Settings) -> ModelConfig:
    """Flag, then config file, then deployment setting."""
    flags = {"model_name": request.model, "api_base": request.api_base}
    return resolve_model_config(config, settings).model_copy(update={k: v for k, v in flags.items() if v})


def sandbox_config(config: MiniFixAgentConfig, request: LocalRunRequest, settings: Settings) -> SandboxConfig:
    """The config's environment section over the deployment's image; --image wins over both."""
    sandbox = config.environment.to_sandbox_config(deployment_sandbox(settings))
    return sandbox.model_copy(update={"image": request.image}) if request.image else sandbox


def print_step(event: StepEvent) -> None:
    """One progress line per model call."""
    limit = f"/{event.step_limit}" if event.step_limit else ""
    tokens = event.prompt_tokens + event.completion_tokens
    if event.format_error:
        print(f"step {event.step}{limit}  format error (no single command)  tokens {tokens}", flush=True)
        return
    command = (event.command or "").strip().replace("\n", " ⏎ ")
    command = command if len(command) <= 100 else command[:97] + "..."
    result = "refused (failed before)" if event.returncode is None else f"rc={event.returncode}"
    print(f"step {event.step}{limit}  {result}  tokens {tokens}  $ {command}", flush=True)


def check_checkout(repo: Path) -> str | None:
    """Why `repo` can't be used, or None."""
    if not repo.is_dir():
        return f"--repo {repo} is not a directory"
    probe = subprocess.run(["git", "-C", str(repo), "rev-parse", "--git-dir"], capture_output=True, text=True)
    return (
        None if probe.returncode == 0 else f"--repo {repo} is not a git checkout: run `git init` there first"
    )


def run_local(request: LocalRunRequest, settings: Settings) -> int:
    """Run the agent on `request.repo` in a fresh sandbox; 0 when it submitted."""
    if problem := check_checkout(request.repo):
        print(f"mini-fix: {problem}", file=sys.stderr)
        return 2
    run_id = uuid.uuid4().hex[:12]
    output = request.output or Path("out") / run_id
    config = agent_config(request, settings)
    model = model_config(config, request, settings)
    print(
        f"run {run_id}: model {model.model_name} at {model.api_base or 'default endpoint'}; output {output}"
    )
    try:
        result, diff = _run_in_sandbox(request, settings, config, model, run_id, output)
    except SandboxError as exc:
        print(f"mini-fix: sandbox failed: {exc}", file=sys.stderr)
        return 3
    output.mkdir(parents=True, exist_ok=True)
    (output / "patch.diff").write_text(diff)
    return _summarise(result, diff, output)


def _run_in_sandbox(
    request: LocalRunRequest,
    settings: Settings,
    config: MiniFixAgentConfig,
    model: ModelConfig,
    run_id: str,
    output: Path,
) -> tuple[AgentResult, str]:
    from bot.agent.model import LitellmModel
    from sandbox.docker import DockerSandbox

    api_key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    writer = TrajectoryWriter(
        output / "trajectory.json",
        secrets=settings.secrets,
        mini_fix={"run_id": run_id, "repo": str(request.repo.resolve())},
    )
    sandbox = DockerSandbox.start(
        sandbox_config(config, request, settings), run_id, on_exec=metrics.SANDBOX_EXEC_SECONDS.observe
    )
    try:
        sandbox.copy_in(request.repo)
        agent = Agent(
            LitellmModel(model, api_key=api_key), sandbox, config, trajectory=writer, on_step=print_step
        )
        result = agent.run(request.task, **sandbox.template_vars(), repo_files=repo_files(request.repo))
        return result, sandbox.diff()
    finally:
        sandbox.close()


def _summarise(result: AgentResult, diff: str, output: Path) -> int:
    tokens = result.prompt_tokens + result.completion_tokens
    files = sum(1 for line in diff.splitlines() if line.startswith("diff --git"))
    print(
        f"{result.exit_status}: {result.steps} steps, {tokens} tokens, {result.elapsed_seconds:.1f}s, "
        f"{files} file(s) changed; trajectory {output / 'trajectory.json'}, patch {output / 'patch.diff'}"
    )
    if result.exit_status == SUBMITTED:
        return 0
    detail = str(result.messages[-1].get("content", "")) if result.messages else ""
    hint = exit_for(result.exit_status).hint
    print(f"mini-fix: not submitted ({result.exit_status}): {hint}", file=sys.stderr)
    if detail and detail != result.exit_status:
        print(f"  {detail}", file=sys.stderr)
    return 1
