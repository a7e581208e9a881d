"""A sandbox's start: its runner starts while the caller goes on (a copy-in's archive is sent meanwhile), and what
needs the runner waits for it."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest

from sandbox.channel import RunnerChannel
from sandbox.docker import DockerSandbox
from tests.integration.conftest import container_exists

pytestmark = pytest.mark.docker


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("print(42)\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-qm", "x"], cwd=repo,
                   check=True)  # fmt: skip
    return repo


def test_the_copy_in_goes_while_the_runner_starts_and_actions_wait_for_it(
    start_sandbox: Callable[..., DockerSandbox], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    events: list[str] = []
    archived = threading.Event()
    real_open = RunnerChannel.open.__func__  # type: ignore[attr-defined]

    def held_open(cls: type[RunnerChannel], *args: Any, **kwargs: Any) -> RunnerChannel:
        archived.wait(20)  # the runner is not ready until the archive went: it must not be waited for first
        channel = real_open(cls, *args, **kwargs)
        events.append("runner ready")
        return channel  # type: ignore[no-any-return]

    monkeypatch.setattr(RunnerChannel, "open", classmethod(held_open))
    sandbox = start_sandbox()
    real_put = sandbox.client.api.put_archive

    def put_archive(*args: Any, **kwargs: Any) -> Any:
        done = real_put(*args, **kwargs)
        events.append("archive sent")
        archived.set()
        return done

    monkeypatch.setattr(sandbox.client.api, "put_archive", put_archive)
    sandbox.copy_in(_repo(tmp_path))  # waits for nothing: the commit it brought is read before the next command
    assert events == ["archive sent"]
    assert sandbox.execute("python3 app.py").output == "42\n"  # waits for the runner
    assert events == ["archive sent", "runner ready"]


def test_the_diff_is_against_the_copied_in_commit_even_after_the_agent_commits(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    sandbox = start_sandbox()
    sandbox.copy_in(_repo(tmp_path))
    sandbox.execute("echo new > new.txt && git add -A && git -c user.name=a -c user.email=a@e.invalid commit -qm agent")
    diff = sandbox.diff()
    assert "+++ b/new.txt" in diff and "app.py" not in diff


def test_a_sandbox_closed_while_its_runner_starts_is_removed(
    start_sandbox: Callable[..., DockerSandbox], docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = RunnerChannel.open.__func__  # type: ignore[attr-defined]
    go = threading.Event()

    def late_open(cls: type[RunnerChannel], *args: Any, **kwargs: Any) -> RunnerChannel:
        go.wait(20)
        return real_open(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(RunnerChannel, "open", classmethod(late_open))
    sandbox = start_sandbox()
    closing = threading.Thread(target=sandbox.close)
    closing.start()
    go.set()
    closing.join(60)
    assert not closing.is_alive() and not container_exists(docker_client, sandbox.container_id)
