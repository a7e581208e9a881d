"""`.devcontainer/devcontainer.json` as the sandbox spec: an image the operator allows, `postCreateCommand` as setup.

Only the `image` form is used. A devcontainer that is built (`build`, `dockerFile`, `dockerComposeFile`) or adds
`features` is reported as not used: building it would run the repository's own instructions on the engine, with
the network, outside the sandbox. The file is untrusted: capped, parsed as data (JSON with comments), never run.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from dataclasses import dataclass, field

from bot.repo_config.load import Reader
from bot.repo_config.schema import RepoConfig

PATHS = (".devcontainer/devcontainer.json", ".devcontainer.json")
MAX_BYTES = 64 * 1024
MAX_COMMANDS = 10
_BUILT = ("build", "dockerFile", "dockerfile", "dockerComposeFile")
# A string (kept), a // or /* */ comment (dropped), or a comma before a closing bracket (dropped): JSONC to JSON.
_JSONC = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)|,(?=\s*[\]}])', re.DOTALL)


@dataclass(frozen=True)
class Devcontainer:
    """What the repository's devcontainer asks for, and what the App cannot use (in a reviewer's words)."""

    image: str | None = None
    setup: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def jsonc(text: str) -> object:
    """Parse JSON with comments and trailing commas (devcontainer.json's dialect); ValueError when it is not."""
    return json.loads(_JSONC.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))


def parse(text: str, source: str = PATHS[0]) -> Devcontainer:
    """The image, the setup commands and the notes of one devcontainer.json."""
    if len(text) > MAX_BYTES:
        return Devcontainer(notes=[f"`{source}` is over {MAX_BYTES // 1024} KiB: not read"])
    try:
        data = jsonc(text)
    except (ValueError, RecursionError):
        return Devcontainer(notes=[f"`{source}` is not valid JSON (with comments): not used"])
    if not isinstance(data, dict):
        return Devcontainer(notes=[f"`{source}` is not a JSON object: not used"])
    notes = []
    built = [key for key in _BUILT if key in data]
    if built:
        notes.append(
            f"`{source}` builds its image (`{built[0]}`): not used, since mini-fix builds no image from a "
            "repository's files (the build would run them on the engine, with the network)"
        )
    if data.get("features"):
        notes.append(f"`{source}` adds `features`: not used (installing them needs a build and the network)")
    image = data.get("image") if isinstance(data.get("image"), str) and not built else None
    return Devcontainer(image=image, setup=_commands(data.get("postCreateCommand")), notes=notes)


def _commands(value: object) -> list[str]:
    """`postCreateCommand` as shell commands: a string, an argv list, or an object of named commands."""
    if isinstance(value, str):
        found = [value]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        found = [shlex.join(value)] if value else []
    elif isinstance(value, dict):
        found = [c for v in value.values() for c in _commands(v)]
    else:
        found = []
    return [c for c in found if c.strip()][:MAX_COMMANDS]


def read(reader: Reader, repo: str) -> tuple[Devcontainer | None, str]:
    """The repository's devcontainer (the first of PATHS it has) and its path; None when it has none."""
    for path in PATHS:
        text = reader(repo, path)
        if text is not None:
            return parse(text, path), path
    return None, ""


def apply(config: RepoConfig, dev: Devcontainer | None, allowed: list[str]) -> tuple[RepoConfig, list[str]]:
    """The config with the devcontainer's image (when allowed) and setup where the repository's own config sets
    neither, and the notes saying what was not used and why."""
    if dev is None:
        return config, []
    notes = list(dev.notes)
    if config.image or dev.image is None:
        return config, notes
    if not any(fnmatch.fnmatchcase(dev.image, pattern) for pattern in allowed):
        why = "no devcontainer image is allowed here" if not allowed else "it is not on this deployment's list"
        notes.append(f"devcontainer image `{dev.image}` not used: {why} (MINIFIX_DEVCONTAINER_IMAGES)")
        return config, notes
    update: dict[str, object] = {"image": dev.image}
    if not config.setup and dev.setup:
        update["setup"] = dev.setup
    return config.model_copy(update=update), notes
