"""A repository's config applied to one job: may it run, and with which model, limits, sandbox and guidance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.agent import profiles
from bot.agent.config import MiniFixAgentConfig
from bot.github.gateway import GitHubError, GitHubGateway
from bot.jobs import Job, JobKind, JobOutcome, JobStatus
from bot.ledger.sql import ORG_WIDE
from bot.pipeline import gitops
from bot.pipeline.task import MAX_GUIDANCE_CHARS, cap, clean
from bot.render import render
from bot.repo_config.load import ORG_REPO, ConfigError, LoadedConfig, Reader, load_repo_config
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from bot.webhooks.policy import queue_full_outcome
from sandbox.base import SandboxConfig

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_BYTES = 256 << 10
SANDBOX_GRACE_SECONDS = 900  # setup and the test command run in the same container as the agent
RememberLabel = Callable[[str, "str | None"], None]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class GitHubReader:
    """Config files read with the installation: the job's own gateway for its repository, a new one for others."""

    github: Callable[[int, str], GitHubGateway]
    installation_id: int
    home: GitHubGateway
    repo: str

    def _gateway(self, target: str) -> GitHubGateway:
        return self.home if target.casefold() == self.repo.casefold() else self.github(self.installation_id, target)

    def __call__(self, target: str, path: str) -> str | None:
        """The file's text on `target`'s default branch, or None."""
        return self._gateway(target).read_file(path)

    def is_public(self, target: str) -> bool:
        """Whether the installation can read `target` and it is public (False on any error)."""
        try:
            return not self._gateway(target).get_repo().private
        except GitHubError:
            return False


def reader(
    github: Callable[[int, str], GitHubGateway], installation_id: int, home: GitHubGateway, repo: str
) -> GitHubReader:
    """The job's config reader (see GitHubReader)."""
    return GitHubReader(github, installation_id, home, repo)


def effective_label(settings: Settings, config: RepoConfig) -> str:
    """The repository's trigger label."""
    return config.label or settings.label


def remember(loaded: LoadedConfig, repo: str, remember_label: RememberLabel | None) -> None:
    """Cache the label the config names for the webhook path (and the owner's, when it came from `.github`)."""
    if remember_label is None:
        return
    remember_label(repo, loaded.config.label)
    owner = repo.split("/", 1)[0]
    if loaded.sources and loaded.sources[0].startswith(f"{owner}/{ORG_REPO}:"):
        remember_label(ORG_WIDE.format(owner=owner), loaded.config.label)


def admit(
    job: Job, gh: GitHubGateway, number: int, settings: Settings, read: Reader, remember_label: RememberLabel | None
) -> RepoConfig | JobOutcome:
    """The repository's config when the job may run; else the outcome, with at most one comment saying why."""
    if job.details.queue_full:
        gh.create_comment(
            number, render("config_comment.md", kind="queue_full", cap=settings.max_queued_per_installation)
        )
        return queue_full_outcome(job, settings)
    try:
        loaded = load_repo_config(job.repo, read)
    except ConfigError as exc:
        gh.create_comment(number, render("config_comment.md", kind="invalid", source=exc.source, error=exc.message))
        log.info("job_config_invalid", source=exc.source)
        return JobOutcome(JobStatus.FAILED, error=f"config_invalid: {exc}")
    remember(loaded, job.repo, remember_label)
    config, source = loaded.config, (loaded.sources[:1] or ("",))[0]
    label = effective_label(settings, config)
    if job.kind == JobKind.FIX and (job.details.label or label).casefold() != label.casefold():
        log.info("job_label_not_trigger", label=job.details.label, trigger=label)
        return JobOutcome(JobStatus.CANCELLED, error=f"label is not this repository's trigger ({label!r})")
    if not config.enabled:
        gh.create_comment(number, render("config_comment.md", kind="disabled", source=source))
        return JobOutcome(JobStatus.CANCELLED, error=f"disabled by {source}")
    if not allowed(config, gh, job.requester):
        gh.create_comment(number, render("config_comment.md", kind="not_allowed", source=source, user=job.requester))
        return JobOutcome(JobStatus.DENIED, error=f"@{job.requester} is not in allowed_users or allowed_teams")
    return config


def allowed(config: RepoConfig, gh: GitHubGateway, user: str) -> bool:
    """Whether the config lets `user` (already a writer) trigger runs."""
    if config.allows_everyone() or user.casefold() in {u.casefold() for u in config.allowed_users}:
        return True
    for team in config.allowed_teams:
        try:
            if gh.team_member(team, user):
                return True
        except GitHubError as exc:  # the App may lack `members: read`: say so in the log, deny
            log.warning("team_membership_unreadable", team=team, error=str(exc))
    return False


def agent_config_for(base: MiniFixAgentConfig, settings: Settings, config: RepoConfig) -> MiniFixAgentConfig:
    """The model's profile (or `base`), the operator's default limits, then the repository's, its model and image."""
    base = profiles.resolve(config.model or base.model.model_name or settings.model, settings.model_profiles, base)
    limits = config.limits
    steps = limits.steps or settings.step_limit
    tokens = limits.tokens or settings.token_limit
    wall = limits.wall_time or settings.wall_time_limit
    agent = base.agent.model_copy(
        update={
            "step_limit": steps or base.agent.step_limit,
            "token_limit": tokens or base.agent.token_limit,
            "wall_time_limit_seconds": wall or base.agent.wall_time_limit_seconds,
        }
    )
    model = base.model.model_copy(update={"model_name": config.model}) if config.model else base.model
    env = base.environment.model_copy(update={"image": config.image}) if config.image else base.environment
    return base.model_copy(update={"agent": agent, "model": model, "environment": env})


def setup_networked(config: RepoConfig, settings: Settings) -> bool:
    """A setup phase that asks for a network gets one (the filtering proxy) only where the operator allows it."""
    return bool(config.setup) and config.setup_network and settings.allow_setup_network


def deployment_sandbox(settings: Settings, config: RepoConfig | None = None) -> SandboxConfig:
    """The deployment's image, size and runtime; a repository's config may resize it and give its setup a network."""
    config = config or RepoConfig()
    return SandboxConfig(
        image=settings.sandbox_image,
        memory=config.limits.memory or settings.sandbox_memory,
        cpus=config.limits.cpus or settings.sandbox_cpus,
        disk=config.limits.disk or settings.sandbox_disk,
        network=setup_networked(config, settings),
        setup_hosts=settings.setup_allowed_hosts,
        setup_upstream_network=settings.setup_upstream_network,
        runtime=settings.sandbox_runtime,
    )


def sandbox_config_for(agent: MiniFixAgentConfig, settings: Settings, config: RepoConfig) -> SandboxConfig:
    """The run's container: the deployment's image and size, the repository's, network only for a setup phase."""
    base = deployment_sandbox(settings, config)
    wall = agent.agent.wall_time_limit_seconds
    if wall > 0:
        base = base.model_copy(update={"wall_time_seconds": max(base.wall_time_seconds, wall + SANDBOX_GRACE_SECONDS)})
    return agent.environment.to_sandbox_config(base)


def guidance(config: RepoConfig, checkout: Path) -> str:
    """The repository's instructions and its AGENTS.md (a regular file in git's objects of the cloned default
    branch, never the working tree, so a symlink cannot point it at a host file), as a task section ('' when none)."""
    blob = gitops.read_blob(checkout, AGENTS_FILE, max_bytes=MAX_AGENTS_BYTES)
    agents = blob.decode("utf-8", "replace") if blob is not None else ""
    instructions, agents = clean(config.instructions), clean(agents)
    if not instructions and not agents:
        return ""
    text = render("repo_guidance.md", instructions=instructions, agents=agents, agents_file=AGENTS_FILE)
    return cap(text.strip(), MAX_GUIDANCE_CHARS)
