"""Which forge a job's gateway talks to: a GitLab namespace's (negative) installation id goes to the GitLab
instance, every other id to the GitHub App."""

from __future__ import annotations

from collections.abc import Callable

from bot.forge_ids import is_gitlab
from bot.github.gateway import GitHubError, GitHubGateway
from bot.settings import Settings

Factory = Callable[[int, str], GitHubGateway]


def gitlab_factory(settings: Settings) -> Factory | None:
    """GitLab gateways for the configured instance (MINIFIX_GITLAB_URL and MINIFIX_GITLAB_TOKEN); None without."""
    if not settings.gitlab_url or settings.gitlab_token is None:
        return None
    from bot.gitlab.gateway import GitLabForge  # python-gitlab only where GitLab is served

    forge = GitLabForge(settings.gitlab_url, settings.gitlab_token.get_secret_value())
    return forge.for_repo


def by_forge(github: Factory | None, gitlab: Factory | None) -> Factory:
    """One factory for both forges, chosen by the job's installation id; a forge that is not served (None) is a
    GitHubError, which fails that job with its message (a job's error, not the worker's)."""

    def for_repo(installation_id: int, repo: str) -> GitHubGateway:
        if not is_gitlab(installation_id):
            if github is None:
                raise GitHubError(
                    "a GitHub job, but this mini-fix serves GitLab only "
                    "(MINIFIX_APP_ID, MINIFIX_PRIVATE_KEY and MINIFIX_WEBHOOK_SECRET are not set)"
                )
            return github(installation_id, repo)
        if gitlab is None:
            raise GitHubError("a GitLab job, but MINIFIX_GITLAB_URL and MINIFIX_GITLAB_TOKEN are not set")
        return gitlab(installation_id, repo)

    return for_repo
