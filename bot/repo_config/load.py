"""Load a repository's `.github/mini-fix.yml` the Probot way.

The file on the repository's default branch, else the one in the owner's `.github` repository, else the built-in
defaults. A file may say `_extends: [owner/]repo[:path]` to build on another file, which is merged under it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError

from bot.agent.config import deep_merge
from bot.repo_config.schema import RepoConfig

CONFIG_PATH = ".github/mini-fix.yml"
ORG_REPO = ".github"
MAX_DEPTH = 10

Reader = Callable[[str, str], "str | None"]
"""(owner/name, path) -> the file's text on the default branch, or None when there is none."""


class ConfigError(Exception):
    """A config file cannot be used; `source` names it (`owner/name:path`), the message says why."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__(f"{source}: {message}")
        self.source, self.message = source, message


@dataclass(frozen=True)
class LoadedConfig:
    """The effective config and the files it came from, most specific first (empty: built-in defaults)."""

    config: RepoConfig
    sources: tuple[str, ...] = ()


def load_repo_config(repo: str, read: Reader) -> LoadedConfig:
    """The effective config of `repo` (owner/name); raises ConfigError for a bad file or `_extends`."""
    owner = repo.split("/", 1)[0]
    for candidate in (repo, f"{owner}/{ORG_REPO}"):
        text = read(candidate, CONFIG_PATH)
        if text is not None:
            data, sources = _resolve(candidate, CONFIG_PATH, text, read, ())
            return LoadedConfig(RepoConfig.model_validate(data), sources)
    return LoadedConfig(RepoConfig())


def _resolve(
    repo: str, path: str, text: str, read: Reader, seen: tuple[str, ...]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """One file merged over what it extends; `seen` holds the files already on this chain."""
    source = f"{repo}:{path}"
    if source in seen:
        raise ConfigError(seen[0], "`_extends` loops: " + " -> ".join([*seen, source]))
    if len(seen) >= MAX_DEPTH:
        raise ConfigError(seen[0], f"`_extends` goes more than {MAX_DEPTH} files deep")
    data = _parse(source, text)
    extends = data.pop("_extends", None)
    _validate(source, data)
    if extends is None:
        return data, (source,)
    if not isinstance(extends, str) or not extends.strip():
        raise ConfigError(source, "`_extends` must be a string: `repo`, `owner/repo` or `owner/repo:path`")
    base_repo, base_path = parse_extends(extends, repo.split("/", 1)[0])
    base_text = read(base_repo, base_path)
    if base_text is None:
        raise ConfigError(source, f"`_extends: {extends}` names {base_repo}:{base_path}, which does not exist")
    base, sources = _resolve(base_repo, base_path, base_text, read, (*seen, source))
    return deep_merge(base, data), (source, *sources)


def parse_extends(value: str, owner: str) -> tuple[str, str]:
    """`[owner/]repo[:path]` as (owner/repo, path); the owner and path default to ours and CONFIG_PATH."""
    target, _, path = value.strip().partition(":")
    repo = target if "/" in target else f"{owner}/{target}"
    return repo, path.strip() or CONFIG_PATH


def _parse(source: str, text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(source, f"not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(source, f"the file must be a YAML mapping, not a {type(data).__name__}")
    return data


def _validate(source: str, data: dict[str, Any]) -> None:
    try:
        RepoConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, describe(exc)) from exc


def describe(exc: ValidationError) -> str:
    """A validation error as one line per problem: `limits.steps: Input should be ...`."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        lines.append(f"{where}: {error['msg']}")
    return "\n".join(lines)
