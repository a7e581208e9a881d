"""A repository's config applied to one job: may it run, and with which guidance (its values: runconfig.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.github.gateway import GitHubError, GitHubGateway
from bot.jobs import Job, JobKind, JobOutcome, JobStatus
from bot.ledger.sql import ORG_WIDE
from bot.pipeline.git import gitops
from bot.pipeline.runconfig import effective_label
from bot.pipeline.task.issue import MAX_GUIDANCE_CHARS, cap, clean
from bot.policy import queue_full_outcome
from bot.render import render
from bot.repo_config.load import ConfigError, Layout, LoadedConfig, Reader, layout_for, load_repo_config, owner_of
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_BYTES = 256 << 10
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


def remember(
    loaded: LoadedConfig, repo: str, remember_label: RememberLabel | None, layout: Layout | None = None
) -> None:
    """Cache the label the config names for the webhook path (and the owner's, when it came from `.github`, or a
    GitLab group's `mini-fix` project)."""
    if remember_label is None:
        return
    remember_label(repo, loaded.config.label)
    owner = owner_of(repo)
    if loaded.sources and loaded.sources[0].startswith(f"{owner}/{(layout or Layout()).org_repo}:"):
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
        loaded = load_repo_config(job.repo, read, layout=layout_for(job.installation_id))
    except ConfigError as exc:
        gh.create_comment(number, render("config_comment.md", kind="invalid", source=exc.source, error=exc.message))
        log.info("job_config_invalid", source=exc.source)
        return JobOutcome(JobStatus.FAILED, error=f"config_invalid: {exc}")
    remember(loaded, job.repo, remember_label, layout_for(job.installation_id))
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
