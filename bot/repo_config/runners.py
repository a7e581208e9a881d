"""How each ecosystem runs one test file or test: the reproduce command templates, and which runner a command is.

A template's placeholders are filled by the judge (`bot/pipeline/judge/reproduce.py`) with values the host took
from its own diff and checked itself, each shell-quoted:

- `{files}`: the test files' paths (pytest, unittest, node's test runner, mocha, jest, vitest);
- `{packages}`: the Go packages holding them (`./pkg/sub`, `.` for the top);
- `{pattern}`: a `go test -run` pattern naming the test functions the change adds (`^(TestA|TestB)$`), `.` for all
  of the packages' tests when it adds none by name (it extended one);
- `{names}`: the test functions the change adds (cargo's filters; none: all of the crate's tests);
- `{classes}`: the test classes, from the file names (`-Dtest=` for Maven's Surefire).

Nothing here reads the checkout: `infer.py` picks the template from the build files, `from_command` from a test
command the repository configured.
"""

from __future__ import annotations

import posixpath
import shlex

PLACEHOLDERS = ("{files}", "{packages}", "{pattern}", "{names}", "{classes}")

PYTEST = "python3 -m pytest -q {files}"
UNITTEST = "python3 -m unittest {files}"
GO = "go test {packages} -run {pattern}"
CARGO = "cargo test --offline -- {names}"
MAVEN = "mvn -o -B test -Dtest={classes} -DfailIfNoTests=false -Dsurefire.failIfNoSpecifiedTests=false"
NODE = "node --test {files}"
MOCHA = "npx mocha {files}"
JEST = "npx jest {files}"
VITEST = "npx vitest run {files}"

# The files each kind of runner is given (the others of a change's test files are laid on the tree, not named).
EXTENSIONS = {
    "python": (".py",),
    "go": ("_test.go",),
    "rust": (".rs",),
    "java": (".java", ".kt"),
    "javascript": (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"),
}
_SHELL = set("|&;<>()$`\n")
_PYTEST = ("pytest", "py.test")
# pytest flags that take no value: kept when the reproduce command is inferred from `test`.
_PYTEST_FLAGS = {"-q", "-qq", "-v", "-vv", "-x", "-s", "-l", "--no-header", "--tb=short", "--tb=line", "--tb=no"}
_JS_RUNNERS = {"mocha": MOCHA, "jest": JEST, "vitest": VITEST}
_JAVA = ("mvn", "mvnw")
# Words before the runner that only start it: `npx jest`, `uv run pytest`, `poetry run pytest`, `env X=1 go test`.
_WRAPPERS = {"npx", "env", "uv", "poetry", "pipenv", "hatch", "pdm", "run", "exec"}


def from_command(test: str) -> str | None:
    """The reproduce template for a test command that names its runner: pytest (its env, wrapper and flags kept),
    unittest, `go test`, `cargo test`, Maven, `node --test`, mocha, jest, vitest; None for anything else (a shell
    pipeline, make, tox, `npm test`: the language's template is used then)."""
    words = _words(test)
    if words is None:
        return None
    env = _leading_assignments(words)
    rest = words[len(env) :]
    at = 0
    while at < len(rest) - 1 and posixpath.basename(rest[at]) in _WRAPPERS:
        at += 1
    if at >= len(rest):
        return None
    word, after = rest[at], rest[at + 1 :]
    name = posixpath.basename(word)
    if name in _PYTEST:
        return _join([*env, *rest[: at + 1], *(w for w in after if w in _PYTEST_FLAGS)]) + " {files}"
    if name.startswith("python") and "-m" in after:
        m = at + 1 + after.index("-m")
        module = rest[m + 1] if m + 1 < len(rest) else ""
        if module in _PYTEST:
            return _join([*env, *rest[: m + 2], *(w for w in rest[m + 2 :] if w in _PYTEST_FLAGS)]) + " {files}"
        if module == "unittest":
            return _join([*env, *rest[: m + 2]]) + " {files}"
        return None
    if name == "go" and after[:1] == ["test"]:
        return _with_env(env, GO)
    if name == "cargo" and "test" in after:
        return _with_env(env, CARGO)
    if name in _JAVA and "test" in after:
        return _with_env(env, f"{shlex.quote(word)} {MAVEN.removeprefix('mvn ')}")
    if name == "node" and "--test" in after:
        return _with_env(env, NODE)
    if name in _JS_RUNNERS:
        return _with_env(env, _JS_RUNNERS[name])
    return None


def javascript(script: str) -> str | None:
    """The reproduce template for package.json's `scripts.test` when it runs node's test runner, mocha, jest or
    vitest itself (`nyc mocha`, `jest --ci`); None for anything else (a custom runner runs the whole suite)."""
    words = _words(script)
    if words is None:
        return None
    for word in words:
        name = posixpath.basename(word)
        if name == "node" and "--test" in words:
            return NODE
        if name in _JS_RUNNERS:
            return _JS_RUNNERS[name]
    return None


def kind(template: str) -> str | None:
    """Which language's test files the template runs (`EXTENSIONS`), from its runner; None: any file."""
    words = _words(template.replace("{", "").replace("}", "")) or []
    for i, word in enumerate(words):
        name = posixpath.basename(word)
        module = words[i + 1] if word == "-m" and i + 1 < len(words) else ""
        if name in _PYTEST or module in (*_PYTEST, "unittest"):
            return "python"
        if name == "go" and words[i + 1 : i + 2] == ["test"]:
            return "go"
        if name == "cargo":
            return "rust"
        if name in (*_JAVA, "gradle", "gradlew"):
            return "java"
        if name in ("node", "npx", *_JS_RUNNERS):
            return "javascript"
    return None


def _words(command: str) -> list[str] | None:
    if _SHELL & set(command):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _leading_assignments(words: list[str]) -> list[str]:
    found = []
    for word in words:
        name, sep, _ = word.partition("=")
        if not sep or not name.isidentifier():
            break
        found.append(word)
    return found


def _with_env(env: list[str], template: str) -> str:
    return f"{_join(env)} {template}" if env else template


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)
