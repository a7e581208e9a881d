"""The first user message names the repository's test command and how to run one test, in its language."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent import profiles
from bot.agent.actions import render
from bot.agent.config import load_config
from bot.repo_config.infer import MAVEN_TEST, infer

SANDBOX = {"timeout": 120, "system": "Linux", "release": "6", "version": "#1", "machine": "x86_64"}


def first_message(**testing: str) -> str:
    return render(load_config().agent.instance_template, task="add() subtracts", **SANDBOX, **testing)


@pytest.mark.parametrize(
    ("files", "command", "one"),
    [
        ({"go.mod": "module x\n"}, "go test ./...", "`-run`"),
        ({"Cargo.toml": ""}, "cargo test --offline", "test function's name"),
        ({"package.json": '{"scripts": {"test": "node --test"}}'}, "npm test", "`node --test`"),
        ({"pom.xml": ""}, MAVEN_TEST, "`-Dtest=`"),
    ],
)
def test_another_language_gets_its_command_and_never_unittest(
    tmp_path: Path, files: dict[str, str], command: str, one: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    message = first_message(**infer(tmp_path).template_vars())
    assert f"The repository's tests run with `{command}` from /testbed" in message and one in message
    assert "unittest" not in message and "python3" not in message


def test_python_keeps_its_instructions_and_no_sample_command_is_added(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text("import unittest\n")
    message = first_message(**infer(tmp_path).template_vars())
    assert "`python3 -m unittest` and the test file's path" in message
    assert "run Python as `python3`" in message
    assert message.count("```") == 2  # only the submission block: nothing else to copy


def test_with_no_test_command_known_the_task_names_no_language() -> None:
    message = " ".join(first_message().split())
    assert "run the tests (the repository's test command)" in message and "unittest" not in message


@pytest.mark.parametrize("profile", ["text", "toolcall"])
def test_the_first_message_asks_to_add_or_extend_tests_where_the_project_keeps_them(profile: str) -> None:
    # All six upstream fixes tried (pflag, big.js, webidl-conversions, TheAlgorithms/Java, python-semver, xmlparser)
    # added their test to an existing test file; in big.js a new file would never run (its runner lists files).
    template = profiles.load_profile(profile).agent.instance_template
    message = " ".join(render(template, task="add() subtracts", **SANDBOX).split())
    assert "NEW file" not in message and "never edit" not in message
    assert "an existing test file" in message
    assert "never delete, skip or weaken an existing test" in message.lower()
