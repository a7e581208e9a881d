"""A repository's setup phase with a network, then the agent's phase without one, in the real Docker sandbox."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.pipeline.attempts.execute import run_setup, run_test
from bot.pipeline.errors import RunFailed
from sandbox.docker import DockerSandbox

pytestmark = pytest.mark.docker
INTERFACES = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '"


def _checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("print('hi')\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def test_setup_has_a_network_and_the_agent_has_none(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    sandbox = start_sandbox(network=True)
    checkout = _checkout(tmp_path)
    sandbox.copy_in(checkout)
    assert "eth0" in sandbox.execute(INTERFACES).output
    setup = ["grep -q eth0 /proc/net/dev", "mkdir -p build && echo cache > build/out.txt"]

    run_setup(sandbox, setup, networked=True, checkout=checkout)

    assert sandbox.execute(INTERFACES).output.split() == ["lo"]
    routes = sandbox.execute("tail -n +2 /proc/net/route | wc -l").output.strip()
    assert routes == "0"
    sandbox.execute("echo \"print('fixed')\" > app.py")
    diff = sandbox.diff()
    assert "app.py" in diff and "build/out.txt" not in diff  # setup output stays out of the change


def test_a_failing_setup_command_ends_the_run(start_sandbox: Callable[..., DockerSandbox], tmp_path: Path) -> None:
    sandbox = start_sandbox()
    checkout = _checkout(tmp_path)
    sandbox.copy_in(checkout)
    with pytest.raises(RunFailed) as failed:
        run_setup(sandbox, ["echo preparing", "echo broken >&2; exit 3"], networked=False, checkout=checkout)
    assert failed.value.outcome == "setup_failed"
    assert "exited with 3" in failed.value.detail and "broken" in failed.value.detail


def test_the_test_command_result_is_reported(start_sandbox: Callable[..., DockerSandbox], tmp_path: Path) -> None:
    sandbox = start_sandbox()
    sandbox.copy_in(_checkout(tmp_path))
    assert run_test(sandbox, "python3 app.py")["passed"] is True
    failed = run_test(sandbox, "echo 1 failed; exit 1")
    assert failed["passed"] is False and failed["returncode"] == 1 and "1 failed" in str(failed["output"])
