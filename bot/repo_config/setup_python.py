"""A Python project's setup, read from its build files: a virtualenv at `~/.venv` (first on the sandbox's PATH)
with the project installed editable with its test extra or group, its requirements files, and pytest and the
plugins its pytest config names when no requirement does.

Only top-level regular files (and regular files in a real `requirements/` directory) are read, capped, as data;
nothing is run here. Poetry projects install through pip (poetry-core builds editable installs); a Pipfile's
packages are installed by name; `uv.lock` is synced with uv when the image has it, else the project goes through pip.
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.repo_config.infer import read_small

VENV = "~/.venv"  # the sandbox puts ~/.venv/bin first on PATH (SandboxConfig.path_prepend)
PIP = f"{VENV}/bin/python -m pip install"
# The venv sees the image's own packages (a pytest from the image's distribution stays usable); an image whose
# Python lacks ensurepip gets a venv without pip, which then uses the image's pip, installing into the venv.
MAKE_VENV = (
    f"python3 -m venv --system-site-packages {VENV} || python3 -m venv --system-site-packages --without-pip {VENV}"
)
TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = (
    "requirements.txt", "requirements-test.txt", "requirements_test.txt", "requirements-tests.txt",
    "requirements-dev.txt", "requirements_dev.txt", "test-requirements.txt", "test_requirements.txt",
    "dev-requirements.txt", "dev_requirements.txt", "requirements/test.txt", "requirements/tests.txt",
    "requirements/dev.txt", "requirements/testing.txt",
)  # fmt: skip
# pytest options (in `addopts`) and ini keys that need a plugin, and the plugin.
PLUGIN_HINTS = {
    "--cov": "pytest-cov", "-n auto": "pytest-xdist", "--numprocesses": "pytest-xdist", "--timeout": "pytest-timeout",
    "asyncio_mode": "pytest-asyncio", "--benchmark": "pytest-benchmark", "--doctest-plus": "pytest-doctestplus",
    "mock_use_standalone_module": "pytest-mock", "--randomly": "pytest-randomly", "env =": "pytest-env",
}  # fmt: skip
_PYTEST_SOURCES = {"pyproject.toml": "[tool.pytest", "setup.cfg": "[tool:pytest]", "tox.ini": "[pytest]",
                   "pytest.ini": "[pytest]"}  # fmt: skip
_REQUIRED_PLUGINS = re.compile(r"^\s*required_plugins\s*=\s*(.+)$", re.MULTILINE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
_SPECIFIER = re.compile(r"[<>=!~][\w.*<>=!~, ]+")  # a Pipfile version such as `>=1.2,<2` (not `*`, not a table)


@dataclass(frozen=True)
class PythonSetup:
    """The commands and the files they were inferred from."""

    commands: list[str]
    sources: list[str]


def infer_python(checkout: Path) -> PythonSetup | None:
    """The project's setup, or None when it is not a Python project with anything to install."""
    texts = {name: text for name in (*_PYTEST_SOURCES, "setup.py", "Pipfile") if (text := read_small(checkout, name))}
    pyproject = _toml(texts.get("pyproject.toml"))
    requirements = [name for name in REQUIREMENT_FILES if _regular(checkout, name)]
    installs, sources = _project(checkout, texts, pyproject)
    for name in requirements:
        installs.append(f"-r {shlex.quote(name)}")
    sources += requirements
    pipfile = _pipfile_packages(_toml(texts.get("Pipfile")))
    if pipfile:
        installs.append(shlex.join(pipfile))
        sources.append("Pipfile")
    declared = _declared(texts, pyproject, [read_small(checkout, name) or "" for name in requirements])
    extra = _missing_runner(texts, declared)
    if extra:
        installs.append(shlex.join(extra))
        sources.append(next(name for name, marker in _PYTEST_SOURCES.items() if marker in texts.get(name, "")))
    if not installs and not _uv_locked(checkout, pyproject):
        return None
    commands = [MAKE_VENV, *(f"{PIP} {words}" for words in installs)]
    if _uv_locked(checkout, pyproject):
        commands[1:2] = [_uv_sync(commands[1] if len(commands) > 1 else "")]
        sources.insert(0, "uv.lock")
    return PythonSetup(commands, list(dict.fromkeys(sources)))


def _project(checkout: Path, texts: dict[str, str], pyproject: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The project itself, editable, with its test extra (or dependency group): the pip arguments and sources."""
    build = next((n for n in ("pyproject.toml", "setup.py", "setup.cfg") if _buildable(n, texts, pyproject)), None)
    if build is None:
        return [], []
    extras = _extras(texts, pyproject)
    extra = next((e for e in TEST_EXTRAS if e in extras), None)
    groups = pyproject.get("dependency-groups")
    group = next((g for g in TEST_EXTRAS if isinstance(groups, dict) and g in groups), None) if not extra else None
    target = f".[{extra}]" if extra else "."
    words = f"-e {shlex.quote(target)}" + (f" --group {shlex.quote(group)}" if group else "")
    installs = [words]
    if poetry := _poetry_group_packages(pyproject):
        installs.append(shlex.join(poetry))
    return installs, [build]


def _buildable(name: str, texts: dict[str, str], pyproject: dict[str, Any]) -> bool:
    if name == "pyproject.toml":  # a pyproject with only tool settings (black, pytest) is not a package
        return "project" in pyproject or "build-system" in pyproject or "poetry" in pyproject.get("tool", {})
    if name == "setup.cfg":
        return "[metadata]" in texts.get(name, "") or "[options]" in texts.get(name, "")
    return name in texts


def _extras(texts: dict[str, str], pyproject: dict[str, Any]) -> set[str]:
    """The optional-dependency names pyproject.toml, setup.cfg or (by a plain reading) setup.py declare."""
    found = set(_table(pyproject.get("project"), "optional-dependencies"))
    found |= set(_table(pyproject.get("tool", {}).get("poetry"), "extras"))
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(texts.get("setup.cfg", ""))
        found |= set(parser["options.extras_require"]) if parser.has_section("options.extras_require") else set()
    except configparser.Error:
        pass
    setup_py = texts.get("setup.py", "")
    if "extras_require" in setup_py:
        tail = setup_py.split("extras_require", 1)[1][:4000]
        found |= {e for e in TEST_EXTRAS if re.search(rf"""["']{e}["']\s*:""", tail)}
    return found


def _poetry_group_packages(pyproject: dict[str, Any]) -> list[str]:
    """Names in Poetry's test/dev groups (pip cannot install those groups): installed by name."""
    poetry = pyproject.get("tool", {}).get("poetry")
    groups = _table(poetry, "group")
    tables = [_table(groups.get(g), "dependencies") for g in TEST_EXTRAS if isinstance(groups.get(g), dict)]
    tables.append(_table(poetry, "dev-dependencies"))
    return sorted({name for table in tables for name in table if name != "python" and _NAME.fullmatch(name)})


def _pipfile_packages(pipfile: dict[str, Any]) -> list[str]:
    """A Pipfile's packages and dev-packages, with their version when it is a plain specifier."""
    found = []
    for section in ("packages", "dev-packages"):
        for name, spec in _table(pipfile, section).items():
            if not _NAME.fullmatch(name):
                continue
            plain = isinstance(spec, str) and _SPECIFIER.fullmatch(spec.strip())
            found.append(f"{name}{spec.strip()}" if plain else name)
    return found


def _declared(texts: dict[str, str], pyproject: dict[str, Any], requirements: list[str]) -> str:
    """Every requirement the project declares, as one lower-case text (not its tool settings: `[tool.pytest]`
    names pytest without requiring it)."""
    project = pyproject.get("project", {})
    tables = [project.get("dependencies"), project.get("optional-dependencies"), pyproject.get("dependency-groups"),
              pyproject.get("tool", {}).get("poetry")]  # fmt: skip
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(texts.get("setup.cfg", ""))
        cfg = [dict(parser[s]) for s in ("options", "options.extras_require") if parser.has_section(s)]
    except configparser.Error:
        cfg = []
    found = [repr(tables), repr(cfg), texts.get("setup.py", ""), texts.get("Pipfile", ""), *requirements]
    return "\n".join(found).lower().replace("_", "-")


def _missing_runner(texts: dict[str, str], declared: str) -> list[str]:
    """pytest and the plugins its config needs, when the project configures pytest and no requirement names them."""
    config = next((texts[n] for n, marker in _PYTEST_SOURCES.items() if marker in texts.get(n, "")), None)
    if config is None:
        return []
    wanted = ["pytest"]
    for match in _REQUIRED_PLUGINS.finditer(config):
        wanted += [w for w in match.group(1).split() if _NAME.match(w)]
    wanted += [plugin for hint, plugin in PLUGIN_HINTS.items() if hint in config]
    missing = []
    for want in dict.fromkeys(wanted):
        name = re.escape(_NAME.match(want).group(0).lower().replace("_", "-"))  # type: ignore[union-attr]
        if not re.search(rf"(?<![\w-]){name}(?![\w-])", declared):
            missing.append(want)
    return missing


def _uv_locked(checkout: Path, pyproject: dict[str, Any]) -> bool:
    return "project" in pyproject and _regular(checkout, "uv.lock")


def _uv_sync(pip_fallback: str) -> str:
    """uv's frozen sync into the venv when the image has uv (the lockfile's versions), else the pip install."""
    sync = f"UV_PROJECT_ENVIRONMENT={VENV} UV_PYTHON_DOWNLOADS=never uv sync --frozen --all-extras"
    return f"if command -v uv >/dev/null; then {sync}; else {pip_fallback or f'{PIP} -e .'}; fi"


def _toml(text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text) if text else {}
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}


def _table(parent: object, key: str) -> dict[str, Any]:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else {}


def _regular(checkout: Path, name: str) -> bool:
    """A regular file at `name` (one level of real directory at most), no link on the way."""
    here = checkout
    for part in name.split("/"):
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            return False
    return stat.S_ISREG(mode)
