"""The environment a sandbox's commands get: the image's PATH with `path_prepend` before it for every action and
check; for the setup phase alone, the proxy, the operator's setup variables and the CA file the tools trust."""

from __future__ import annotations

from pathlib import Path

from sandbox.base import SandboxConfig, SandboxError

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Docker's, for an image without one
SETUP_CA_PATH = "/tmp/mini-fix-setup-ca.pem"  # written by the action user (the archive API refuses a tmpfs)
MAX_CA_BYTES = 4 << 20
# Each tool's own way to be told which certificates to trust (OpenSSL and Python, pip, requests, Node and npm,
# cargo, git; Go and uv read SSL_CERT_FILE).
CA_VARIABLES = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CARGO_HTTP_CAINFO",
                "GIT_SSL_CAINFO")  # fmt: skip


def action_env(config: SandboxConfig, image_env: list[str]) -> dict[str, str]:
    """`config.env` with PATH: `path_prepend` (`~/` read as the image's HOME; dropped when it has none) before the
    image's PATH, unless `config.env` sets PATH itself."""
    env = dict(config.env)
    if not config.path_prepend or "PATH" in env:
        return env
    image = dict(item.split("=", 1) for item in image_env if "=" in item)
    home = image.get("HOME", "")
    first = [home + p[1:] if p.startswith("~/") and home.startswith("/") else p for p in config.path_prepend]
    first = [p for p in first if p.startswith("/")]  # a `~/` entry with no HOME to read it by is left out
    return {**env, "PATH": ":".join([*first, image.get("PATH") or DEFAULT_PATH])} if first else env


def setup_env(config: SandboxConfig, proxy: dict[str, str], with_ca: bool) -> dict[str, str]:
    """What setup commands get on top of the action environment: the operator's variables, then the CA file's and
    the proxy's (which no repository or operator variable may point elsewhere)."""
    env = {key: value.get_secret_value() for key, value in config.setup_env.items()}
    if with_ca:
        env |= dict.fromkeys(CA_VARIABLES, SETUP_CA_PATH)
    return {**env, **proxy}


def ca_bytes(path: str) -> bytes:
    """The CA file's bytes, once checked to be a PEM bundle of bounded size."""
    try:
        data = Path(path).read_bytes()[: MAX_CA_BYTES + 1]
    except OSError as exc:
        raise SandboxError(f"the setup CA file cannot be read (MINIFIX_SETUP_CA_FILE): {exc}") from exc
    if len(data) > MAX_CA_BYTES or b"-----BEGIN CERTIFICATE-----" not in data:
        raise SandboxError("the setup CA file is not a PEM certificate bundle under 4 MiB (MINIFIX_SETUP_CA_FILE)")
    return data
