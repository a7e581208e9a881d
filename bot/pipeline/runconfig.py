"""A run's configuration, resolved in one place for the App, `mini-fix run` and `mini-fix eval`.

For each value the first source that sets it wins: the command line's flags, the repository's
`.github/mini-fix.yml` (held to the operator's ceilings first, each clamp a note), the deployment's settings, the
agent config file. The precedence is written here only; docs/configuration.md's table is this module, row by row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import SecretStr

from bot.agent import profiles
from bot.agent.config import DEFAULT_CONFIG_PATH, MiniFixAgentConfig, ModelConfig, load_config, load_specs
from bot.pipeline.ceilings import clamp
from bot.pipeline.change import ChangeCaps
from bot.repo_config import devcontainer as devcontainers
from bot.repo_config import infer, setup_infer
from bot.repo_config.schema import DEFAULT_CI_FOLLOWUPS, RepoConfig
from bot.repo_config.setup_infer import ONLINE_ENV
from bot.repo_config.setup_mirrors import mirror_files
from bot.settings import Settings
from sandbox.base import SandboxConfig

SANDBOX_GRACE_SECONDS = 900  # setup and the test command run in the same container as the agent
ATTEMPTS_CEILING = "is above this deployment's ceiling (MINIFIX_MAX_AGENT_ATTEMPTS)"


@dataclass(frozen=True)
class Flags:
    """What a command line asks for (None or empty: not given)."""

    config: tuple[str, ...] = ()
    """`-c` specs; given at all, the agent config loaded from them is used as is (no model profile)."""
    model: str | None = None
    api_base: str | None = None
    image: str | None = None
    """The sandbox image, over the repository's (a task's, in eval), the file's and the deployment's."""
    attempts: int | None = None


NO_FLAGS = Flags()


@dataclass(frozen=True)
class RunConfig:
    """Everything a run is configured with, resolved once; the notes say what the operator's ceilings changed."""

    agent: MiniFixAgentConfig
    """The agent config (the model's profile, or the file) with the run's limits, model and image applied."""
    model: ModelConfig
    """The model called: its name and API base resolved."""
    sandbox: SandboxConfig
    repo: RepoConfig
    """The repository's config within the ceilings (a devcontainer's image and setup applied)."""
    attempts: int
    setup_network: bool
    """Whether a setup phase gets a network (the filtering proxy)."""
    caps: ChangeCaps
    max_export_bytes: int
    job_tokens: int = 0
    """The job's total over all its attempts (MINIFIX_MAX_TOKENS); 0: none, the agent's own limits only (eval)."""
    job_seconds: float = 0
    """The job's wall time over all its attempts (MINIFIX_MAX_WALL_TIME); 0: none (eval)."""
    notes: tuple[str, ...] = ()
    setup_inferred: bool = False
    """The setup was inferred from the build files (`with_setup`): the repository never asked for it, so its
    failure is reported and the run goes on without it."""

    @property
    def profile(self) -> str:
        """The agent config's name (a shipped profile, or the files it came from)."""
        return self.agent.profile


def resolve(
    settings: Settings,
    agent_file: MiniFixAgentConfig,
    repo: RepoConfig,
    flags: Flags = NO_FLAGS,
    *,
    devcontainer: devcontainers.Devcontainer | None = None,
    ceilings: bool = True,
) -> RunConfig:
    """The run's configuration from the deployment, the agent config file, the repository's config (and its
    devcontainer, when read) and the flags; `ceilings=False` for the operator's own tasks (eval), never clamped."""
    notes: list[str] = []
    if ceilings:
        repo, notes = clamp(repo, settings)
    if devcontainer is not None:
        repo, more = devcontainers.apply(repo, devcontainer, settings.devcontainer_images)
        notes += more
    agent = _agent(settings, agent_file, repo, flags)
    networked = bool(repo.setup) and repo.setup_network and settings.allow_setup_network
    attempts, note = _attempts(settings, repo, flags, ceilings)
    return RunConfig(
        agent=agent,
        model=_model(settings, agent, flags),
        sandbox=_sandbox(settings, agent, repo, flags, networked),
        repo=repo,
        attempts=attempts,
        setup_network=networked,
        caps=ChangeCaps(settings.max_changed_files, settings.max_changed_bytes),
        max_export_bytes=settings.max_export_bytes,
        job_tokens=settings.max_tokens if ceilings else 0,  # the operator's own tasks: no job-wide budget
        job_seconds=settings.max_wall_time if ceilings else 0,
        notes=tuple([*notes, note] if note else notes),
    )


def agent_file(settings: Settings, specs: Sequence[str] = ()) -> MiniFixAgentConfig:
    """The agent config file: mini-swe-agent's `-c` (the specs, files or `key.path=value`, merged in order) in place
    of ours; without any, MINIFIX_AGENT_CONFIG, else `prompts/agent.yaml`. A model's profile is chosen in `resolve`."""
    if specs:
        return load_specs(list(specs))
    return load_config(settings.agent_config or DEFAULT_CONFIG_PATH)


def _agent(settings: Settings, file: MiniFixAgentConfig, repo: RepoConfig, flags: Flags) -> MiniFixAgentConfig:
    """-c's config as given, else the model's profile (MINIFIX_MODEL_PROFILES), else the file; then the limits:
    the repository's, the deployment's, the file's."""
    if not flags.config:
        name = flags.model or repo.model or file.model.model_name or settings.model
        profile = profiles.profile_for(name, settings.model_profiles)
        file = file if profile is None else profiles.load_profile(profile)
    limits = repo.limits
    own = file.agent
    agent = own.model_copy(
        update={
            "step_limit": limits.steps or settings.step_limit or own.step_limit,
            "token_limit": limits.tokens or settings.token_limit or own.token_limit,
            "wall_time_limit_seconds": limits.wall_time or settings.wall_time_limit or own.wall_time_limit_seconds,
        }
    )
    model = file.model.model_copy(update={"model_name": repo.model}) if repo.model else file.model
    env = file.environment.model_copy(update={"image": repo.image}) if repo.image else file.environment
    return file.model_copy(update={"agent": agent, "model": model, "environment": env})


def _model(settings: Settings, agent: MiniFixAgentConfig, flags: Flags) -> ModelConfig:
    """The flag, then the repository's model (already in `agent`), the file's, the deployment's."""
    model = agent.model
    return model.model_copy(
        update={
            "model_name": flags.model or model.model_name or settings.model,
            "api_base": flags.api_base or model.api_base or settings.model_api_base,
        }
    )


def _sandbox(
    settings: Settings, agent: MiniFixAgentConfig, repo: RepoConfig, flags: Flags, networked: bool
) -> SandboxConfig:
    """The deployment's container resized by the repository, outliving the agent's wall time; the file's
    `environment:` (working directory, variables, action timeout); the image: the flag, the repository's (already in
    `agent`), the file's `environment.image`, the deployment's."""
    limits, env = repo.limits, agent.environment
    base = SandboxConfig(
        image=flags.image or env.image or settings.sandbox_image,
        cwd=env.cwd,
        env=dict(env.env),
        timeout=env.timeout,
        memory=limits.memory or settings.sandbox_memory,
        cpus=limits.cpus or settings.sandbox_cpus,
        disk=limits.disk or settings.sandbox_disk,
        network=networked,
        setup_hosts=settings.setup_allowed_hosts,
        setup_upstream_network=settings.setup_upstream_network,
        setup_mirror_addresses=settings.setup_mirror_addresses,
        setup_files=mirror_files(settings.setup_cargo_mirror, settings.setup_maven_mirror),
        setup_env={**{key: SecretStr(value) for key, value in ONLINE_ENV.items()}, **settings.setup_env},
        setup_ca_file=str(settings.setup_ca_file) if settings.setup_ca_file else None,
        runtime=settings.sandbox_runtime,
    )
    if (wall := agent.agent.wall_time_limit_seconds) > 0:
        base = base.model_copy(update={"wall_time_seconds": max(base.wall_time_seconds, wall + SANDBOX_GRACE_SECONDS)})
    return base


def _attempts(settings: Settings, repo: RepoConfig, flags: Flags, ceilings: bool) -> tuple[int, str]:
    """The flag, the repository's (clamped) `attempts:`, MINIFIX_AGENT_ATTEMPTS; at least one, at most
    MINIFIX_MAX_AGENT_ATTEMPTS, and the note saying so when lowered ('' when not). The operator's own tasks (eval,
    `ceilings=False`): the flag, else one (a task's `attempts:` and the App's setting do not apply)."""
    if not ceilings:
        return max(1, flags.attempts or 1), ""
    asked = max(1, flags.attempts or repo.attempts or settings.agent_attempts)
    top = max(1, settings.max_agent_attempts)
    if asked <= top:
        return asked, ""
    source = f"--attempts {asked}" if flags.attempts else f"MINIFIX_AGENT_ATTEMPTS={asked}"
    return top, f"`{source}` {ATTEMPTS_CEILING}; used {top}"


def sandbox_limit(settings: Settings) -> int:
    """Attempt sandboxes one worker process runs at once: MINIFIX_MAX_SANDBOXES, else one per slot and attempt."""
    return settings.max_sandboxes or max(1, settings.workers) * max(1, settings.agent_attempts)


def effective_label(settings: Settings, config: RepoConfig) -> str:
    """The repository's trigger label: its `label:`, else MINIFIX_LABEL."""
    return config.label or settings.label


def ci_limit(config: RepoConfig, settings: Settings) -> int:
    """CI follow-ups allowed per PR between a person's runs: the repository's `ci_followups:` (else the default),
    within the operator's ceiling (MINIFIX_MAX_CI_FOLLOWUPS)."""
    wanted = DEFAULT_CI_FOLLOWUPS if config.ci_followups is None else config.ci_followups
    return min(wanted, settings.max_ci_followups)


def with_setup(resolved: RunConfig, checkout: Path, settings: Settings) -> tuple[RunConfig, setup_infer.SetupPlan]:
    """The run's configuration once the checkout is there: where the repository gives no setup, the one inferred
    from its build files (MINIFIX_INFER_SETUP), with the setup proxy's network for it; and the setup plan."""
    repo, plan = setup_infer.resolve(resolved.repo, checkout, enabled=settings.infer_setup)
    if not plan.inferred:
        return resolved, plan
    sandbox = resolved.sandbox.model_copy(update={"network": True})
    return replace(resolved, repo=repo, setup_network=True, setup_inferred=True, sandbox=sandbox), plan


@dataclass(frozen=True)
class Settled:
    """What only the checkout can tell, settled once for every driver (`settle`): the run's configuration with its
    setup (the repository's, else inferred) and its tests (configured, else inferred) filled in."""

    config: RunConfig
    """`config.repo` has `test`, `reproduce` and `test_paths` as the judge uses them; `config.sandbox` the setup's
    network."""
    testing: infer.TestPlan
    """The test command and why (the agent's first message names it)."""
    setup: setup_infer.SetupPlan
    """The setup commands and why."""

    @property
    def tested(self) -> tuple[RepoConfig, infer.TestPlan]:
        return self.config.repo, self.testing


def settle(resolved: RunConfig, checkout: Path, settings: Settings) -> Settled:
    """The run's configuration once the checkout is there (the App after its clone, `mini-fix run` on the local
    checkout): its setup first (`with_setup`), then its tests (`infer.resolve`), the order the App always used."""
    config, setup = with_setup(resolved, checkout, settings)
    repo, testing = infer.resolve(config.repo, checkout)
    return Settled(replace(config, repo=repo), testing, setup)
