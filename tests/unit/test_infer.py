"""Test command inference from a checkout's build files (bot/repo_config/infer.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.pipeline.judge.reproduce import template as reproduce_template
from bot.repo_config import runners
from bot.repo_config.infer import MAVEN_TEST, MAX_FILE_BYTES, TEST_PATHS, infer, resolve
from bot.repo_config.schema import RepoConfig


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def package(test: str) -> str:
    return json.dumps({"name": "x", "scripts": {"test": test}})


@pytest.mark.parametrize(
    ("files", "command", "why"),
    [
        ({"package.json": package("node --test")}, "npm test", "no lockfile"),
        ({"package.json": package("tape t.js"), "yarn.lock": ""}, "yarn test", "yarn.lock"),
        ({"package.json": package("jest"), "pnpm-lock.yaml": ""}, "pnpm test", "pnpm-lock.yaml"),
        ({"go.mod": "module x\n"}, "go test ./...", "go.mod"),
        ({"Cargo.toml": "[package]\n"}, "cargo test --offline", "Cargo.toml"),
        ({"pom.xml": "<project/>"}, MAVEN_TEST, "pom.xml"),
        ({"build.gradle.kts": ""}, "gradle test --offline", "build.gradle.kts"),
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, "python3 -m pytest -q", "pyproject.toml"),
        ({"tox.ini": "[pytest]\n"}, "python3 -m pytest -q", "tox.ini"),
        # python-semver's layout: `.pytest.ini`, tox.ini running pytest; conftest.py: pytest, never unittest
        ({".pytest.ini": "[pytest]\n", "tests/test_a.py": ""}, "python3 -m pytest -q", ".pytest.ini"),
        (
            {"tox.ini": "[testenv]\ncommands =\n    pytest {posargs}\n", "tests/test_a.py": ""},
            "python3 -m pytest -q",
            "tox.ini",
        ),
        ({"tox.ini": "[testenv]\ncommands = python -m pytest -q\n"}, "python3 -m pytest -q", "tox.ini"),
        ({"tests/conftest.py": "", "tests/test_a.py": ""}, "python3 -m pytest -q", "tests/conftest.py"),
        (
            {"tox.ini": "[testenv]\ncommands = python -m unittest\n", "tests/test_a.py": ""},
            "python3 -m unittest discover -t . -s .",
            "unittest",
        ),
        ({"calc.py": "", "tests/test_calc.py": ""}, "python3 -m unittest discover -t . -s .", "unittest"),
    ],
)
def test_each_build_file_names_its_command_and_why(
    tmp_path: Path, files: dict[str, str], command: str, why: str
) -> None:
    plan = infer(tree(tmp_path, files))
    assert plan.command == command
    assert why in plan.why and plan.one_test


def test_npm_placeholder_script_and_a_broken_package_json_fall_through(tmp_path: Path) -> None:
    tree(tmp_path, {"package.json": package('echo "Error: no test specified" && exit 1'), "go.mod": "module x\n"})
    assert infer(tmp_path).command == "go test ./..."
    (tmp_path / "package.json").write_text("{not json")
    assert infer(tmp_path).command == "go test ./..."


def test_a_symlinked_or_oversized_build_file_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(package("node --test"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "package.json").symlink_to(outside)
    assert infer(repo).command is None
    (repo / "package.json").unlink()
    (repo / "package.json").write_text(package("node --test") + " " * MAX_FILE_BYTES)
    assert infer(repo).command is None
    (repo / "go.mod").symlink_to(outside)
    assert infer(repo).command is None


def test_nothing_to_go_on_infers_nothing(tmp_path: Path) -> None:
    plan = infer(tree(tmp_path, {"README.md": "hi", "calc.py": ""}))  # Python with no test file: no unittest
    assert plan.command is None and plan.language == "unknown"
    assert resolve(RepoConfig(), tmp_path)[0] == RepoConfig()


def test_resolve_fills_test_reproduce_and_the_language_preset(tmp_path: Path) -> None:
    repo, plan = resolve(RepoConfig(), tree(tmp_path, {"go.mod": "module x\n"}))
    assert (repo.test, repo.reproduce, repo.test_paths) == ("go test ./...", runners.GO, TEST_PATHS["go"])
    assert plan.template_vars()["test_command"] == "go test ./..."


def test_resolve_keeps_what_the_repository_configured(tmp_path: Path) -> None:
    tree(tmp_path, {"Cargo.toml": ""})
    configured = RepoConfig(test="make check", test_paths=["spec/**"], reproduce="./one.sh {files}")
    repo, plan = resolve(configured, tmp_path)
    assert repo == configured
    assert plan.command == "make check" and "configured" in plan.why and "cargo" in plan.one_test
    repo, _ = resolve(RepoConfig(test="make check"), tmp_path)
    assert repo.test_paths == TEST_PATHS["rust"] and repo.test == "make check"


@pytest.mark.parametrize(
    ("files", "test", "reproduce"),
    [
        # The case: `test:` set, even to the inferred command itself, turned the check off outside Python.
        ({"go.mod": "module x\n"}, "go test ./...", runners.GO),
        ({"go.mod": "module x\n"}, "make test", runners.GO),
        ({"Cargo.toml": "[package]\n"}, "cargo test --all-features", runners.CARGO),
        ({"pom.xml": "<project/>"}, "mvn -q verify", runners.MAVEN),
        ({"package.json": package("mocha test/")}, "npm test", runners.MOCHA),
        ({"package.json": package("jest --ci")}, "yarn test", runners.JEST),
        ({"package.json": package("vitest run")}, "npm run test", runners.VITEST),
        ({"package.json": package("node --test")}, "npm test", runners.NODE),
        ({"package.json": package("node ./test/runner.js")}, "npm test", "npm test"),  # its own runner: whole suite
        ({"package.json": package("node ./test/runner.js")}, "npx jest", runners.JEST),  # the configured runner
        ({"tox.ini": "[pytest]\n"}, "tox -e py311", runners.PYTEST),
        ({"tests/test_a.py": ""}, "make check", runners.UNITTEST),
        ({"README.md": ""}, "uv run pytest -q", "uv run pytest -q {files}"),
    ],
)
def test_a_configured_test_never_turns_the_reproduction_check_off(
    tmp_path: Path, files: dict[str, str], test: str, reproduce: str
) -> None:
    repo, _ = resolve(RepoConfig(test=test), tree(tmp_path, files))
    assert (repo.test, repo.reproduce) == (test, reproduce)
    assert reproduce_template(repo) == (reproduce, "")


def test_each_language_infers_a_command_for_one_test_file_or_test(tmp_path: Path) -> None:
    expected = {
        "go.mod": runners.GO,
        "Cargo.toml": runners.CARGO,
        "pom.xml": runners.MAVEN,
        "pyproject.toml": runners.PYTEST,
    }
    for name, template in expected.items():
        root = tmp_path / name
        tree(root, {name: "[tool.pytest.ini_options]\n" if name == "pyproject.toml" else ""})
        assert resolve(RepoConfig(), root)[0].reproduce == template
    assert resolve(RepoConfig(), tree(tmp_path / "js", {"package.json": package("jest")}))[0].reproduce == runners.JEST
