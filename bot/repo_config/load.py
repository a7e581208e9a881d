"""Load a repository's `.github/mini-fix.yml` the Probot way.

The file on the repository's default branch, else the one in the owner's `.github` repository, else the built-in
defaults. A file may say `_extends: [owner/]repo[:path]` to build on another file, which is merged under it.

Which files `_extends` may name (Probot reads any file the installation can; we are narrower, since an org-wide
install can read private repositories the config's author cannot): a YAML file under `.github/` (`.yml`/`.yaml`)
in the job's own repository, the owner's `.github` repository (the org's designated home for shared settings, as
GitHub and Probot treat it), or a public repository; the App must be able to read it too. An error in a file of
another repository names the file and line only: its content is never quoted, nor its keys listed.

On GitLab (`Layout` GITLAB) the same rules hold with GitLab's names: `.gitlab/mini-fix.yml`, and the group's defaults
in its `mini-fix` project (`group[/sub]/mini-fix`: the project's own parent group, as `.github` is the owner's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode

from bot.agent.config import deep_merge
from bot.repo_config.schema import RepoConfig

CONFIG_PATH = ".github/mini-fix.yml"
ORG_REPO = ".github"
MAX_DEPTH = 10


@dataclass(frozen=True)
class Layout:
    """Where one forge keeps a repository's config and its owner's defaults."""

    config_path: str = CONFIG_PATH
    org_repo: str = ORG_REPO  # the owner's (group's) repository holding shared defaults
    config_dir: str = ".github"  # the directory `_extends` may name files under


GITHUB = Layout()
GITLAB = Layout(".gitlab/mini-fix.yml", "mini-fix", ".gitlab")


def layout_for(installation_id: int) -> Layout:
    """The forge's layout for a job's installation (GitLab's ids are negative: `bot.forge_ids`)."""
    from bot.forge_ids import is_gitlab

    return GITLAB if is_gitlab(installation_id) else GITHUB


def owner_of(repo: str) -> str:
    """`owner` of `owner/name`; a GitLab project's parent group of `group/sub/name`."""
    return repo.rsplit("/", 1)[0]


Reader = Callable[[str, str], "str | None"]
"""(owner/name, path) -> the file's text on the default branch, or None when there is none."""

IsPublic = Callable[[str], bool]
"""owner/name -> whether it is a public repository the App can read (False when unknown)."""


@runtime_checkable
class PublicAwareReader(Protocol):
    """A Reader that can also tell whether a repository is public (the App's GitHub reader)."""

    def __call__(self, repo: str, path: str) -> str | None:
        """The file's text on the default branch, or None."""
        ...

    def is_public(self, repo: str) -> bool:
        """Whether `repo` is a public repository the App can read."""
        ...


def _never(_: str) -> bool:
    return False


EXTENDS_SUFFIXES = (".yml", ".yaml")


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


@dataclass(frozen=True)
class _Chain:
    """What every file of one lookup shares: the job's repository, how to read, which repositories are public."""

    home: str
    read: Reader
    public: IsPublic
    layout: Layout = GITHUB

    def quotes(self, repo: str) -> bool:
        """Whether an error may quote this repository's file (only the job's own repository's)."""
        return repo.casefold() == self.home.casefold()

    def may_extend(self, repo: str) -> bool:
        """The job's repository, the owner's `.github` repository, or a public one."""
        org = f"{owner_of(self.home)}/{self.layout.org_repo}"
        return repo.casefold() in (self.home.casefold(), org.casefold()) or self.public(repo)


def load_repo_config(repo: str, read: Reader | PublicAwareReader, *, layout: Layout = GITHUB) -> LoadedConfig:
    """The effective config of `repo` (owner/name); raises ConfigError for a bad file or `_extends`. Without
    `is_public` on the reader, no repository counts as public (only this one and the owner's `.github`)."""
    chain = _Chain(repo, read, read.is_public if isinstance(read, PublicAwareReader) else _never, layout)
    for candidate in (repo, f"{owner_of(repo)}/{layout.org_repo}"):
        text = read(candidate, layout.config_path)
        if text is not None:
            data, sources = _resolve(chain, candidate, layout.config_path, text, ())
            return LoadedConfig(RepoConfig.model_validate(data), sources)
    return LoadedConfig(RepoConfig())


def _resolve(
    chain: _Chain, repo: str, path: str, text: str, seen: tuple[str, ...]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """One file merged over what it extends; `seen` holds the files already on this chain."""
    source = f"{repo}:{path}"
    if source in seen:
        raise ConfigError(seen[0], "`_extends` loops: " + " -> ".join([*seen, source]))
    if len(seen) >= MAX_DEPTH:
        raise ConfigError(seen[0], f"`_extends` goes more than {MAX_DEPTH} files deep")
    quote = chain.quotes(repo)
    data = _parse(source, text, quote)
    extends = data.pop("_extends", None)
    _validate(source, data, text, quote)
    if extends is None:
        return data, (source,)
    if not isinstance(extends, str) or not extends.strip():
        raise ConfigError(source, "`_extends` must be a string: `repo`, `owner/repo` or `owner/repo:path`")
    base_repo, base_path = parse_extends(extends, owner_of(repo), chain.layout.config_path)
    _check_target(chain, source, extends, base_repo, base_path)
    base_text = chain.read(base_repo, base_path)
    if base_text is None:
        raise ConfigError(source, f"`_extends: {extends}` names {base_repo}:{base_path}, which does not exist")
    base, sources = _resolve(chain, base_repo, base_path, base_text, (*seen, source))
    return deep_merge(base, data), (source, *sources)


def _check_target(chain: _Chain, source: str, extends: str, repo: str, path: str) -> None:
    """Refuse an `_extends` target that is not a YAML file under `.github/` of a repository we may read from."""
    parts, home_dir = path.split("/"), chain.layout.config_dir
    if parts[0] != home_dir or len(parts) < 2 or ".." in parts or "" in parts or not path.endswith(EXTENDS_SUFFIXES):
        raise ConfigError(source, f"`_extends: {extends}` must name a `.yml` or `.yaml` file under `{home_dir}/`")
    if not chain.may_extend(repo):
        # The same words whether the repository is private, missing or unreadable: nothing is learnt about it.
        org = f"{owner_of(chain.home)}/{chain.layout.org_repo}"
        allowed = f"it may name only this repository, {org} or a public repository the App can read"
        raise ConfigError(source, f"`_extends: {extends}` names {repo}; {allowed}")


def parse_extends(value: str, owner: str, default_path: str = CONFIG_PATH) -> tuple[str, str]:
    """`[owner/]repo[:path]` as (owner/repo, path); the owner and path default to ours and the config's path."""
    target, _, path = value.strip().partition(":")
    repo = target if "/" in target else f"{owner}/{target}"
    return repo, path.strip() or default_path


def _parse(source: str, text: str, quote: bool) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        if quote:
            raise ConfigError(source, f"not valid YAML: {exc}") from exc
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(source, f"not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(source, f"the file must be a YAML mapping, not a {type(data).__name__}")
    return data


def _validate(source: str, data: dict[str, Any], text: str, quote: bool) -> None:
    try:
        RepoConfig.model_validate(data)
    except ValidationError as exc:
        if quote:
            raise ConfigError(source, describe(exc)) from exc
        lines = _key_lines(text, {str(e["loc"][0]) for e in exc.errors(include_url=False) if e["loc"]})
        where = ", ".join(f"line {n}" for n in lines) or "the top level"
        raise ConfigError(source, f"not a valid mini-fix config at {where}") from None


def _key_lines(text: str, keys: set[str]) -> list[int]:
    """The line numbers of these top-level keys in a YAML mapping (already parsed once, so it composes)."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, MappingNode):
        return []
    return sorted({k.start_mark.line + 1 for k, _ in node.value if str(k.value) in keys})


def describe(exc: ValidationError) -> str:
    """A validation error as one line per problem: `limits.steps: Input should be ...`."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        lines.append(f"{where}: {error['msg']}")
    return "\n".join(lines)
