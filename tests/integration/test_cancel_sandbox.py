"""`/agent stop` reaches a long-running action: the container is removed at once and the step reads `cancelled`."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from bot.pipeline.attempts import execute as steps
from bot.pipeline.errors import RunFailed
from sandbox.base import SandboxError
from sandbox.docker import DockerSandbox

pytestmark = pytest.mark.docker


def test_cancel_removes_the_container_under_a_running_action(start_sandbox: Callable[..., DockerSandbox]) -> None:
    sandbox = start_sandbox(timeout=120)
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    with pytest.raises(RunFailed) as failed, steps.closed_on_cancel(sandbox, cancel, poll=0.1):
        try:
            result = sandbox.execute("sleep 100 && echo finished")
        except SandboxError as exc:  # the container went away under the action, as it should
            raise RunFailed("sandbox_failed", str(exc)) from exc
        pytest.fail(f"the action ran to its end: {result}")
    assert failed.value.outcome == "cancelled"
    with pytest.raises(SandboxError):
        sandbox.execute("true")


def test_no_cancel_leaves_the_sandbox_alone(start_sandbox: Callable[..., DockerSandbox]) -> None:
    sandbox = start_sandbox()
    with steps.closed_on_cancel(sandbox, threading.Event(), poll=0.05):
        assert sandbox.execute("sleep 0.3 && echo ok").output.strip() == "ok"
    assert sandbox.execute("echo still here").output.strip() == "still here"
