"""Agent profiles: the operator's glob → profile table and the shipped profiles (which config wins: runconfig)."""

from __future__ import annotations

import fnmatch
import functools
from pathlib import Path

from bot.agent.config import DEFAULT_CONFIG_PATH, AgentConfigError, MiniFixAgentConfig, load_config

PROFILES_DIR = DEFAULT_CONFIG_PATH.parent / "profiles"
SHIPPED: dict[str, Path] = {"text": DEFAULT_CONFIG_PATH, "toolcall": PROFILES_DIR / "toolcall.yaml"}
"""The profiles mini-fix ships: small text-format models (`prompts/agent.yaml`) and tool-calling models."""


def parse_table(table: str) -> list[tuple[str, str]]:
    """`glob=profile` entries, separated by commas or newlines, in order; a malformed entry is an error."""
    entries = []
    for item in table.replace("\n", ",").split(","):
        if not item.strip():
            continue
        pattern, sep, profile = item.partition("=")
        if not sep or not pattern.strip() or not profile.strip():
            raise AgentConfigError(
                f"MINIFIX_MODEL_PROFILES: entry {item.strip()!r} is not `<model glob>=<profile>`; "
                "write e.g. `hosted_vllm/qwen3*=toolcall`"
            )
        entries.append((pattern.strip(), profile.strip()))
    return entries


def profile_path(profile: str) -> Path:
    """A shipped profile's file, or the profile taken as a YAML path; one that does not exist is an error."""
    path = SHIPPED.get(profile, Path(profile))
    if not path.is_file():
        names = ", ".join(SHIPPED)
        raise AgentConfigError(
            f"MINIFIX_MODEL_PROFILES: profile {profile!r} is neither a shipped profile ({names}) nor a config file; "
            "name one of those or the path of an agent config YAML"
        )
    return path


def profile_for(model: str, table: str) -> str | None:
    """The profile of the first glob (case-insensitive) matching the model name; None when none matches."""
    for pattern, profile in parse_table(table):
        if fnmatch.fnmatchcase(model.lower(), pattern.lower()):
            return profile
    return None


@functools.lru_cache(maxsize=16)
def load_profile(profile: str) -> MiniFixAgentConfig:
    """A profile's config, read once per process (callers copy it before changing anything)."""
    return load_config(profile_path(profile))
