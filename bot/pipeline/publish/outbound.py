"""The one redaction point on the way out to GitHub: every title and body a run posts passes through here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.github.gateway import GitHubGateway, GitToken, PullRequest
from bot.trajectory import redact


class RedactingGateway:
    """A GitHubGateway whose writes have every secret the worker holds (and each token it mints) replaced."""

    def __init__(self, inner: GitHubGateway, secrets: list[str]) -> None:
        self._inner = inner
        self._secrets = list(secrets)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # the reads pass through unchanged

    def _clean(self, text: str) -> str:
        cleaned: str = redact(text, self._secrets)
        return cleaned

    def git_token(self) -> str:
        """The installation token, remembered so nothing posted later can carry it."""
        token = self._inner.git_token()
        self._secrets.append(token)
        return token

    def git_credential(self) -> GitToken:
        """A new installation token with its expiry, remembered like `git_token`'s."""
        credential = self._inner.git_credential()
        self._secrets.append(credential.token)
        return credential

    def create_comment(self, number: int, body: str) -> int:
        """Post a redacted comment."""
        return self._inner.create_comment(number, self._clean(body))

    def post_comment(self, number: int, body: str) -> None:
        """Post a redacted comment nobody waits for."""
        self._inner.post_comment(number, self._clean(body))

    def update_comment(self, comment_id: int, body: str) -> None:
        """Edit a comment, redacted."""
        self._inner.update_comment(comment_id, self._clean(body))

    def create_pr(self, *, title: str, body: str, head: str, base: str) -> PullRequest:
        """Open a PR with a redacted title and body."""
        return self._inner.create_pr(title=self._clean(title), body=self._clean(body), head=head, base=base)

    def update_pr(self, number: int, *, title: str, body: str) -> None:
        """Edit a PR, redacted."""
        self._inner.update_pr(number, title=self._clean(title), body=self._clean(body))


def redacting(github: Callable[[int, str], GitHubGateway], secrets: list[str]) -> Callable[[int, str], GitHubGateway]:
    """A gateway factory whose every gateway redacts its writes: the worker's notices and chores post through it."""

    def for_repo(installation_id: int, repo: str) -> GitHubGateway:
        return RedactingGateway(github(installation_id, repo), secrets)

    return for_repo
