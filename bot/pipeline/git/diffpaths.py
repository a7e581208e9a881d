"""The paths a diff touches, read by the worker from the diff's text, and which of them the App may not push."""

from __future__ import annotations

import codecs
import fnmatch
import re
from collections.abc import Iterable

PROTECTED_PREFIXES = (".github/workflows/",)  # the App has no `workflows` permission: a push touching them fails
# GitLab CI's definition: a push changing it would run the agent's pipeline with the project's CI variables
PROTECTED_FILES = (".gitlab-ci.yml",)
_HEADER = re.compile(r"^diff --git (.+)$")
_RENAME = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")


def changed_paths(diff: str) -> list[str]:
    """Every path a diff touches (both sides of renames and copies), in order, without duplicates."""
    paths: dict[str, None] = {}
    for line in diff.splitlines():
        if m := _HEADER.match(line):
            paths.update(dict.fromkeys(_header_paths(m.group(1))))
        elif m := _RENAME.match(line):
            paths[_unquote(m.group(1))] = None
    return list(paths)


def _header_paths(rest: str) -> list[str]:
    if rest.startswith('"') or rest.endswith('"'):
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        return [_unquote(p)[2:] for p in parts if len(_unquote(p)) > 2]
    n = (len(rest) - 5) // 2  # "a/P b/P": only the unrenamed case splits unambiguously
    if rest.startswith("a/") and rest[2 + n : 5 + n] == " b/" and rest[2 : 2 + n] == rest[5 + n :]:
        return [rest[2 : 2 + n]]
    return []  # a rename: its `rename from/to` lines name the paths


def _unquote(path: str) -> str:
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = codecs.escape_decode(path[1:-1].encode())[0]
        return raw.decode("utf-8", errors="replace")
    return path


def protected_paths(diff: str, extra_globs: Iterable[str] = ()) -> list[str]:
    """Paths in `diff` the App may not push: workflows (no `workflows` permission), GitLab's `.gitlab-ci.yml` and
    configured globs."""
    return protected(changed_paths(diff), extra_globs)


def protected(paths: Iterable[str], extra_globs: Iterable[str] = ()) -> list[str]:
    """The paths the App may not push; a path is also tried as a directory, so a file or symlink replacing
    `.github/workflows` is caught and `secret/**` matches `secret` itself."""
    globs = list(extra_globs)
    return [p for p in paths if any(_matches(c, globs) for c in (p, p.rstrip("/") + "/"))]


def _matches(path: str, globs: list[str]) -> bool:
    if path.startswith(PROTECTED_PREFIXES) or path.rstrip("/") in PROTECTED_FILES:
        return True
    return any(path.startswith(g) if g.endswith("/") else fnmatch.fnmatchcase(path, g) for g in globs)
