"""GitHub's web addresses, derived from the API root a deployment talks to (github.com or a GHES host)."""

from __future__ import annotations

from urllib.parse import urlsplit


def web_url(api_url: str) -> str:
    """GitHub's web root for an API root: api.github.com -> github.com, https://HOST/api/v3 -> https://HOST."""
    base = api_url.rstrip("/")
    if urlsplit(base).hostname == "api.github.com":
        return "https://github.com"
    return base.removesuffix("/api/v3")
