"""Operator ceilings over what a repository's config may ask for: limits clamped, image and model allowlisted."""

from __future__ import annotations

import fnmatch

from bot.repo_config.schema import Limits, RepoConfig
from bot.settings import Settings

_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size_bytes(size: str) -> int:
    """`4g`, `512m`, `100000` (bytes) as a number of bytes."""
    size = size.strip().lower()
    unit = _UNITS.get(size[-1:], 0)
    return int(size[:-1]) * unit if unit else int(size)


def clamp(config: RepoConfig, settings: Settings) -> tuple[RepoConfig, list[str]]:
    """The config within the operator's ceilings, and one note per value that was lowered or refused."""
    notes: list[str] = []
    limits = _clamp_limits(config.limits, settings, notes)
    update: dict[str, object] = {"limits": limits}
    if config.image and not _allowed(config.image, settings.allowed_images or [settings.sandbox_image]):
        notes.append(f"image `{config.image}` is not on this deployment's allowlist; used `{settings.sandbox_image}`")
        update["image"] = None
    if config.model and not _allowed(config.model, allowed_models(settings)):
        notes.append(f"model `{config.model}` is not on this deployment's allowlist; used `{settings.model}`")
        update["model"] = None
    if config.attempts is not None and config.attempts > settings.max_agent_attempts:
        top = settings.max_agent_attempts
        notes.append(f"`attempts: {config.attempts}` is above this deployment's ceiling; used {top}")
        update["attempts"] = top
    if config.ci_followups is not None and config.ci_followups > settings.max_ci_followups:
        top = settings.max_ci_followups
        notes.append(f"`ci_followups: {config.ci_followups}` is above this deployment's ceiling; used {top}")
        update["ci_followups"] = top
    if config.setup_network and not settings.allow_setup_network:
        notes.append("`setup_network` is off on this deployment (MINIFIX_ALLOW_SETUP_NETWORK); setup ran offline")
        update["setup_network"] = False
    return config.model_copy(update=update), notes


def allowed_models(settings: Settings) -> list[str]:
    """Model-name patterns a repository may pick; by default any model of the deployment's own provider."""
    provider = settings.model.split("/", 1)[0]
    return settings.allowed_models or [settings.model, f"{provider}/*"]


def _allowed(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _clamp_limits(limits: Limits, settings: Settings, notes: list[str]) -> Limits:
    numbers = {"steps": settings.max_steps, "tokens": settings.max_tokens, "wall_time": settings.max_wall_time}
    update: dict[str, object] = {}
    for key, ceiling in numbers.items():
        value = getattr(limits, key)
        if value is not None and value > ceiling:
            notes.append(f"`limits.{key}: {value}` is above this deployment's ceiling; used {ceiling}")
            update[key] = ceiling
    if limits.cpus is not None and limits.cpus > settings.max_cpus:
        notes.append(f"`limits.cpus: {limits.cpus}` is above this deployment's ceiling; used {settings.max_cpus}")
        update["cpus"] = settings.max_cpus
    for key, top in (("memory", settings.max_memory), ("disk", settings.max_disk)):
        size: str | None = getattr(limits, key)
        if size is not None and not 0 < size_bytes(size) <= size_bytes(top):
            notes.append(f"`limits.{key}: {size}` is outside this deployment's ceiling; used {top}")
            update[key] = top
    return limits.model_copy(update=update)
