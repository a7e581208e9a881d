"""Which forges a deployment serves and their credentials: the GitHub App's and the GitLab instance's settings,
what is missing when one is half-configured, and the checks of their secrets and the App's private key. `Settings`
(bot/settings.py) inherits them; nothing is read at import time."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import SecretStr
from pydantic_settings import BaseSettings

PLACEHOLDER_SECRETS = {"", "changeme", "change-me", "changethis", "secret", "development", "xxx", "todo"}

Forge = Literal["github", "gitlab"]
NO_FORGE = (
    "No forge is configured: serve a GitHub App (MINIFIX_APP_ID, MINIFIX_PRIVATE_KEY, MINIFIX_WEBHOOK_SECRET) "
    "or a GitLab instance (MINIFIX_GITLAB_URL, MINIFIX_GITLAB_TOKEN, MINIFIX_GITLAB_WEBHOOK_SECRET; docs/gitlab.md), "
    "or both."
)


class SettingsError(ValueError):
    """A setting is missing or unusable; the message names the variable to set."""


class ForgeSettings(BaseSettings):
    """The forge part of the operator's settings (prefix MINIFIX_, as `Settings` configures)."""

    app_id: int | None = None
    """The GitHub App's id."""
    private_key: SecretStr | None = None
    """The App's PEM private key (or use private_key_path)."""
    private_key_path: Path | None = None
    """File holding the App's PEM private key."""
    webhook_secret: SecretStr = SecretStr("")
    """Secret GitHub signs webhook deliveries with."""
    github_api_url: str = "https://api.github.com"
    """REST API root; set for GitHub Enterprise Server (https://HOST/api/v3) and in tests."""
    gitlab_url: str | None = None
    """A GitLab instance to serve as well (https://gitlab.example.org; its API at /api/v4); unset: GitHub only."""
    gitlab_token: SecretStr | None = None
    """The GitLab bot user's, group's or project's access token (scopes `api`, `write_repository`)."""
    gitlab_webhook_secret: SecretStr | None = None
    """The secret token GitLab sends in `X-Gitlab-Token` with every webhook delivery."""
    gitlab_bot_username: str | None = None
    """The GitLab user mini-fix acts as, when not an access token's `project_<id>_bot_...` user: its own notes are
    ignored, and pipelines it started are the ones that get CI follow-ups."""

    def require_webhook_secret(self) -> str:
        """The webhook secret, or a SettingsError that says how to set one."""
        secret = self.webhook_secret.get_secret_value()
        if secret.strip().lower() in PLACEHOLDER_SECRETS:
            raise SettingsError(
                "MINIFIX_WEBHOOK_SECRET is missing or a placeholder. No GitHub App yet? Run `mini-fix setup` "
                "(README, Quick start): it creates the App and writes its id, key and webhook secret to ./.env, "
                "which this command reads. Otherwise set it to your App's webhook secret (e.g. `openssl rand -hex 32`, "
                "then paste the same value into the App's settings)."
            )
        return secret

    def forges(self, *, webhooks_only: bool = False) -> tuple[Forge, ...]:
        """The forges this deployment serves, ("github", "gitlab") or one of them; a SettingsError naming what is
        missing when a forge is half-configured, or when neither is. GitHub needs MINIFIX_APP_ID, the private key and
        MINIFIX_WEBHOOK_SECRET; GitLab needs MINIFIX_GITLAB_URL, MINIFIX_GITLAB_TOKEN and MINIFIX_GITLAB_WEBHOOK_SECRET.
        `webhooks_only` (a web process without a worker, which never calls a forge): each forge's webhook secret is
        all it needs, but a forge with any of its settings still needs that one."""
        if problems := self.forge_problems(webhooks_only=webhooks_only):
            raise SettingsError(" ".join(problems))
        served: list[Forge] = []
        if any(self._github_parts().values()):
            served.append("github")
        if any(self._gitlab_parts().values()):
            served.append("gitlab")
        return tuple(served)

    def forge_problems(self, *, webhooks_only: bool = False) -> list[str]:
        """What keeps `forges()` from answering, each with its fix; [] when it answers."""
        problems = [p for p in (self._github_problem(webhooks_only), self._gitlab_problem(webhooks_only)) if p]
        if problems or any(self._github_parts().values()) or any(self._gitlab_parts().values()):
            return problems
        return [NO_FORGE, self._webhook_secret_hint()]  # GitHub-first: how to get a GitHub App

    def _github_parts(self) -> dict[str, bool]:
        key = self.private_key is not None and bool(self.private_key.get_secret_value().strip())
        return {
            "MINIFIX_APP_ID": self.app_id is not None,
            "MINIFIX_PRIVATE_KEY (or MINIFIX_PRIVATE_KEY_PATH)": key or self.private_key_path is not None,
            "MINIFIX_WEBHOOK_SECRET": bool(self.webhook_secret.get_secret_value().strip()),
        }

    def _gitlab_parts(self) -> dict[str, bool]:
        return {
            "MINIFIX_GITLAB_URL": bool(self.gitlab_url),
            "MINIFIX_GITLAB_TOKEN": self.gitlab_token is not None and bool(self.gitlab_token.get_secret_value()),
            "MINIFIX_GITLAB_WEBHOOK_SECRET": self.gitlab_webhook_secret is not None
            and bool(self.gitlab_webhook_secret.get_secret_value().strip()),
        }

    def _github_problem(self, webhooks_only: bool) -> str | None:
        parts = self._github_parts()
        if not any(parts.values()):
            return None
        needed = ["MINIFIX_WEBHOOK_SECRET"] if webhooks_only else list(parts)
        found = []
        if missing := [name for name in needed if not parts[name]]:
            unset = " and ".join(missing)
            found.append(f"GitHub is half-configured: {unset} not set (set it, or unset the other GitHub App settings)")
        checks = [self.require_webhook_secret] if parts["MINIFIX_WEBHOOK_SECRET"] else []
        if not webhooks_only and parts["MINIFIX_PRIVATE_KEY (or MINIFIX_PRIVATE_KEY_PATH)"]:
            checks.append(self.require_private_key)  # a set key that is no PEM key: said along with what is unset
        for check in checks:
            try:
                check()
            except SettingsError as exc:
                found.append(str(exc))
        return " ".join(found) or None

    def _gitlab_problem(self, webhooks_only: bool) -> str | None:
        parts = self._gitlab_parts()
        if not any(parts.values()):
            return None
        needed = ["MINIFIX_GITLAB_WEBHOOK_SECRET"] if webhooks_only else list(parts)
        if missing := [name for name in needed if not parts[name]]:
            unset = " and ".join(missing)
            return f"GitLab is half-configured: {unset} not set (set it, or unset the other GitLab settings)"
        try:
            self.require_gitlab_webhook_secret()
        except SettingsError as exc:
            return str(exc)
        return None

    def require_gitlab_webhook_secret(self) -> str:
        """GitLab's webhook secret token, or a SettingsError when it is unset or a placeholder."""
        secret = self.gitlab_webhook_secret.get_secret_value() if self.gitlab_webhook_secret else ""
        if secret.strip().lower() in PLACEHOLDER_SECRETS:
            raise SettingsError(
                "MINIFIX_GITLAB_WEBHOOK_SECRET is missing or a placeholder: set a random one (e.g. "
                "`openssl rand -hex 32`) and the same value as the GitLab webhook's secret token (docs/gitlab.md)"
            )
        return secret

    def _webhook_secret_hint(self) -> str:
        try:
            self.require_webhook_secret()
        except SettingsError as exc:
            return str(exc)
        return ""

    def require_private_key(self) -> str:
        """The App's private key PEM, or a SettingsError naming the variables (also when it is not a PEM key)."""
        if self.private_key is not None and self.private_key.get_secret_value().strip():
            return _pem_key(self.private_key.get_secret_value().replace("\\n", "\n"), "MINIFIX_PRIVATE_KEY")
        if self.private_key_path is not None:
            try:
                text = self.private_key_path.read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise SettingsError(f"MINIFIX_PRIVATE_KEY_PATH={self.private_key_path} cannot be read: {exc}") from exc
            return _pem_key(text, f"MINIFIX_PRIVATE_KEY_PATH={self.private_key_path}")
        raise SettingsError("Set MINIFIX_PRIVATE_KEY (PEM text) or MINIFIX_PRIVATE_KEY_PATH (a .pem file).")


def _pem_key(text: str, where: str) -> str:
    """`text` when it is a PEM private key; else a SettingsError that says where it came from, never its content."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(text.encode(), password=None)
    except (ValueError, TypeError) as exc:  # not PEM, a public key or certificate, or a passphrase-protected key
        raise SettingsError(
            f"{where} is not an unencrypted PEM private key ({type(exc).__name__}); use the .pem file GitHub "
            "generated for the App (Settings -> Developer settings -> GitHub Apps -> Private keys)"
        ) from None
    return text
