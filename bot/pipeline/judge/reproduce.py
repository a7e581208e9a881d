"""An attempt's reproduction test: which of its files are tests, and the command that runs just those files."""

from __future__ import annotations

import fnmatch
import posixpath
import shlex
from collections.abc import Callable, Iterable

from bot.repo_config.schema import RepoConfig

FILES = "{files}"
_PYTEST = ("pytest", "py.test")
_SHELL = set("|&;<>()$`\n")
# pytest flags that take no value: kept when the reproduce command is inferred from `test`.
_PYTEST_FLAGS = {"-q", "-qq", "-v", "-vv", "-x", "-s", "-l", "--no-header", "--tb=short", "--tb=line", "--tb=no"}


def matches(path: str, globs: Iterable[str]) -> bool:
    """Whether `path` matches one of the `test_paths` globs: one without a `/` matches the file name at any
    depth, one with a `/` the whole path (`**/` also matches no directory at all)."""
    for glob in globs:
        if "/" not in glob:
            if fnmatch.fnmatchcase(posixpath.basename(path), glob):
                return True
        elif fnmatch.fnmatchcase(path, glob) or (glob.startswith("**/") and fnmatch.fnmatchcase(path, glob[3:])):
            return True
    return False


def test_files(paths: Iterable[str], globs: Iterable[str], present: Callable[[str], bool]) -> list[str]:
    """The change's test files: paths matching the globs that are regular files after the change (not deleted)."""
    globs = list(globs)
    return sorted({p for p in paths if matches(p, globs) and present(p)})


def template(repo: RepoConfig) -> tuple[str | None, str]:
    """The reproduce command template (with `{files}`) and, when there is none, why, in a reviewer's words."""
    if repo.reproduce:  # without `{files}` it runs a package or the whole suite (`go test ./...`)
        return repo.reproduce, ""
    if not repo.test:
        return None, "no reproduction check: the repository sets neither `reproduce` nor `test` in .github/mini-fix.yml"
    inferred = infer(repo.test)
    if inferred is None:
        return None, (
            "no reproduction check: the test files could not be run on their own with the repository's `test` "
            "command; set `reproduce` (e.g. `python3 -m pytest -q {files}`) in .github/mini-fix.yml"
        )
    return inferred, ""


def infer(test: str) -> str | None:
    """`python3 -m pytest -q {files}` from a pytest `test`, `python3 -m unittest {files}` from a unittest one;
    None for anything else (a shell pipeline, make, tox, another language's runner)."""
    if _SHELL & set(test):
        return None
    try:
        words = shlex.split(test)
    except ValueError:
        return None
    env = _leading_assignments(words)
    rest = words[len(env) :]
    for i, word in enumerate(rest):
        name = posixpath.basename(word)
        if name in _PYTEST or (word == "-m" and i + 1 < len(rest) and rest[i + 1] in _PYTEST):
            end = i + 1 if name in _PYTEST else i + 2
            flags = [w for w in rest[end:] if w in _PYTEST_FLAGS]
            return _join([*env, *rest[:end], *flags]) + f" {FILES}"
        if word == "-m" and i + 1 < len(rest) and rest[i + 1] == "unittest":
            return _join([*env, *rest[: i + 2]]) + f" {FILES}"
    return None


def command(template: str, files: list[str]) -> str:
    """`template` with `{files}` replaced by the shell-quoted file paths."""
    return template.replace(FILES, " ".join(shlex.quote(f) for f in files))


def runnable(repo: RepoConfig, files: list[str]) -> list[str]:
    """The files given to the command: Python files for a command inferred for pytest or unittest, else all (a
    command without `{files}` gets none, but the test files are still laid on the base commit)."""
    if repo.reproduce:
        return files
    return [f for f in files if f.endswith(".py")]


def _leading_assignments(words: list[str]) -> list[str]:
    found = []
    for word in words:
        name, sep, _ = word.partition("=")
        if not sep or not name.isidentifier():
            break
        found.append(word)
    return found


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)
