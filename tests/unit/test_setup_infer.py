"""The setup inferred from a checkout's build files, per ecosystem; top-level regular files only, nothing run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.repo_config.schema import RepoConfig
from bot.repo_config.setup_infer import MAVEN_RESOLVE, SetupPlan, infer, resolve
from bot.repo_config.setup_python import MAKE_VENV, PIP

PROJECT = '[project]\nname = "pkg"\nversion = "1"\ndependencies = ["attrs"]\n'


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_pyproject_project_is_installed_editable_in_the_venv_with_its_test_extra(tmp_path: Path) -> None:
    extras = '[project.optional-dependencies]\ndocs = ["sphinx"]\ntests = ["pytest"]\ndev = ["black"]\n'
    plan = infer(tree(tmp_path, {"pyproject.toml": PROJECT + extras}))
    assert plan == SetupPlan([MAKE_VENV, f"{PIP} -e '.[tests]'"], "inferred from pyproject.toml", inferred=True)


def test_a_dependency_group_is_installed_when_there_is_no_test_extra(tmp_path: Path) -> None:
    groups = '[dependency-groups]\ndev = ["pytest", "pytest-cov"]\n'
    assert infer(tree(tmp_path, {"pyproject.toml": PROJECT + groups})).commands[1] == f"{PIP} -e . --group dev"


def test_setup_py_extras_and_requirements_files_are_all_installed(tmp_path: Path) -> None:
    setup = "from setuptools import setup\nsetup(name='x', extras_require={'test': ['pytest'], 'docs': []})\n"
    files = {"setup.py": setup, "requirements-dev.txt": "mock\n", "requirements/test.txt": "hypothesis\n"}
    plan = infer(tree(tmp_path, files))
    assert plan.commands == [
        MAKE_VENV,
        f"{PIP} -e '.[test]'",
        f"{PIP} -r requirements-dev.txt",
        f"{PIP} -r requirements/test.txt",
    ]
    assert plan.why == "inferred from setup.py, requirements-dev.txt, requirements/test.txt"


def test_pytest_and_the_plugins_its_config_needs_are_added_when_no_requirement_names_them(tmp_path: Path) -> None:
    ini = "[pytest]\naddopts = --cov=pkg -n auto\nrequired_plugins = pytest-mock>=3\n"
    plan = infer(tree(tmp_path, {"tox.ini": ini, "requirements.txt": "requests\npytest-xdist==3.5\n"}))
    assert plan.commands[1:] == [f"{PIP} -r requirements.txt", f"{PIP} pytest 'pytest-mock>=3' pytest-cov"]
    assert plan.why == "inferred from requirements.txt, tox.ini"


def test_a_pytest_config_alone_installs_pytest_and_a_tool_only_pyproject_is_no_package(tmp_path: Path) -> None:
    pyproject = "[tool.black]\nline-length = 100\n\n[tool.pytest.ini_options]\ntestpaths = ['tests']\n"
    plan = infer(tree(tmp_path, {"pyproject.toml": pyproject}))
    assert plan.commands == [MAKE_VENV, f"{PIP} pytest"] and plan.why == "inferred from pyproject.toml"


def test_poetry_installs_through_pip_with_its_test_group_by_name(tmp_path: Path) -> None:
    poetry = (
        '[tool.poetry]\nname = "p"\nversion = "1"\n[tool.poetry.dependencies]\npython = "^3.9"\n'
        '[tool.poetry.group.test.dependencies]\npytest = "^8"\npytest-asyncio = "*"\n'
        '[build-system]\nrequires = ["poetry-core"]\nbuild-backend = "poetry.core.masonry.api"\n'
    )
    plan = infer(tree(tmp_path, {"pyproject.toml": poetry, "poetry.lock": ""}))
    assert plan.commands[1:] == [f"{PIP} -e .", f"{PIP} pytest pytest-asyncio"]


def test_uv_lock_syncs_with_uv_when_the_image_has_it_else_pip(tmp_path: Path) -> None:
    plan = infer(tree(tmp_path, {"pyproject.toml": PROJECT, "uv.lock": "version = 1\n"}))
    assert plan.commands[1].startswith("if command -v uv >/dev/null; then UV_PROJECT_ENVIRONMENT=~/.venv ")
    assert "uv sync --frozen" in plan.commands[1] and plan.commands[1].endswith(f"else {PIP} -e .; fi")
    assert plan.why == "inferred from uv.lock, pyproject.toml"


def test_a_pipfile_installs_its_packages_by_name_with_plain_versions(tmp_path: Path) -> None:
    pipfile = '[packages]\nattrs = ">=22"\nrequests = "*"\n[dev-packages]\npytest = {version = "*"}\n'
    assert infer(tree(tmp_path, {"Pipfile": pipfile})).commands[1:] == [f"{PIP} 'attrs>=22' requests pytest"]


@pytest.mark.parametrize(
    ("lockfile", "command"),
    [
        ("package-lock.json", "npm ci --no-audit --no-fund"),
        ("yarn.lock", "if command -v yarn >/dev/null; then yarn install --frozen-lockfile; else npm install"),
        ("pnpm-lock.yaml", "if command -v pnpm >/dev/null; then pnpm install --frozen-lockfile; else npm install"),
        (None, "npm install --no-package-lock --no-audit --no-fund"),
    ],
)
def test_javascript_installs_by_its_lockfile(tmp_path: Path, lockfile: str | None, command: str) -> None:
    files = {"package.json": '{"devDependencies": {"mocha": "^10"}}'} | ({lockfile: ""} if lockfile else {})
    [found] = infer(tree(tmp_path, files)).commands
    assert found.startswith(command)


def test_a_package_json_without_dependencies_needs_no_setup(tmp_path: Path) -> None:
    plan = infer(tree(tmp_path, {"package.json": '{"scripts": {"test": "node --test"}}'}))
    assert plan == SetupPlan([], "no dependencies to install found in the repository's build files")


def test_go_and_rust_fetch_their_dependencies_unless_vendored_and_maven_reads_the_images_repository(
    tmp_path: Path,
) -> None:
    go = "module x\n\ngo 1.21\n\nrequire github.com/spf13/pflag v1.0.5\n"
    files = {"go.mod": go, "Cargo.toml": "[dependencies]\nserde = '1'\n", "pom.xml": "<project/>"}
    plan = infer(tree(tmp_path, files))
    assert plan.commands == ["go mod download", "cargo fetch"] and plan.why == "inferred from go.mod, Cargo.toml"
    (tmp_path / "vendor").mkdir()
    assert infer(tmp_path).commands == []


def test_maven_resolves_a_poms_dependencies_without_compiling(tmp_path: Path) -> None:
    pom = "<project><dependencies><dependency><artifactId>x</artifactId></dependency></dependencies></project>"
    plan = infer(tree(tmp_path, {"pom.xml": pom}))
    assert plan.commands == [MAVEN_RESOLVE] and plan.why == "inferred from pom.xml"
    assert "test-compile" in MAVEN_RESOLVE and "-Dmaven.main.skip=true" in MAVEN_RESOLVE


def test_a_bootstrap_script_runs_only_when_no_ecosystem_gives_a_setup(tmp_path: Path) -> None:
    tree(tmp_path, {"script/bootstrap": "#!/bin/sh\nmake deps\n"})
    assert infer(tmp_path) == SetupPlan(["bash script/bootstrap"], "inferred from script/bootstrap", inferred=True)
    tree(tmp_path, {"requirements.txt": "attrs\n"})
    assert "bash script/bootstrap" not in infer(tmp_path).commands


def test_links_are_never_followed_to_a_build_file(tmp_path: Path) -> None:
    outside = tree(tmp_path / "outside", {"package.json": '{"dependencies": {"a": "1"}}', "bootstrap": "x"})
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(outside / "package.json", repo / "package.json")
    os.symlink(outside, repo / "script")
    os.symlink(outside / "bootstrap", repo / "requirements.txt")
    assert infer(repo).commands == []


def test_resolve_keeps_the_repositorys_own_setup_and_can_be_turned_off(tmp_path: Path) -> None:
    tree(tmp_path, {"requirements.txt": "attrs\n"})
    own = RepoConfig(setup=["make deps"])
    assert resolve(own, tmp_path, enabled=True) == (own, SetupPlan(["make deps"], own_why(), inferred=False))
    off = resolve(RepoConfig(), tmp_path, enabled=False)
    assert off == (RepoConfig(), SetupPlan([], "not inferred: MINIFIX_INFER_SETUP is off"))
    config, plan = resolve(RepoConfig(), tmp_path, enabled=True)
    assert plan.inferred and config.setup == plan.commands and config.setup_network


def own_why() -> str:
    return "the repository's own: `setup` or its devcontainer"


def test_describe_names_the_commands_and_where_they_came_from() -> None:
    assert SetupPlan(["npm ci"], "inferred from package-lock.json").describe() == (
        "`npm ci` (inferred from package-lock.json)"
    )
    assert SetupPlan([], "nothing to install").describe() == "none (nothing to install)"
