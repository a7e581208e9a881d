"""A Docker engine away for a while (~30 s) is waited out when a sandbox starts, within a bound; a request the
engine refused, or a missing image, fails at once. No engine is needed: the start is a stand-in and sleeps are
recorded, never slept."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from docker.errors import APIError

from bot.pipeline.runtime import Runtime
from bot.settings import Settings
from sandbox.base import EngineUnavailable, ImageMissing, SandboxConfig, SandboxError
from sandbox.engine import translated
from sandbox.engine_retry import TRIES, WITHIN, transient, with_engine_retry


def _server_error(status: int = 500) -> SandboxError:
    response = requests.Response()
    response.status_code = status
    try:
        with translated("img"):
            raise APIError("engine", response=response, explanation="connection refused")
    except SandboxError as exc:
        return exc
    raise AssertionError("not translated")


def _gone() -> SandboxError:
    try:
        with translated("img"):
            raise requests.exceptions.ConnectionError("docker.sock: connection refused")
    except SandboxError as exc:
        return exc
    raise AssertionError("not translated")


class Flaky:
    """Raises the given errors in turn, then returns "sandbox"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors, self.calls = list(errors), 0

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "sandbox"


def test_engine_away_and_engine_5xx_are_transient_a_refusal_and_a_missing_image_are_not() -> None:
    assert isinstance(_gone(), EngineUnavailable) and transient(_gone())
    assert transient(_server_error(500)) and transient(_server_error(503))
    assert not transient(_server_error(409)) and not transient(_server_error(400))
    assert not transient(ImageMissing("gone")) and not transient(SandboxError("the sandbox user must be ..."))


def test_an_engine_away_for_a_while_is_waited_out() -> None:
    sleeps: list[float] = []
    start = Flaky(_gone(), _server_error(), _gone(), _gone())
    assert with_engine_retry(start, what="t", sleep=sleeps.append) == "sandbox"
    assert start.calls == 5 and sleeps == [1, 2, 4, 8]  # 15 s: a ~30 s outage fits in the bound


def test_a_refused_request_fails_at_once() -> None:
    sleeps: list[float] = []
    start = Flaky(_server_error(409))
    with pytest.raises(SandboxError, match="refused"):
        with_engine_retry(start, what="t", sleep=sleeps.append)
    assert start.calls == 1 and sleeps == []


def test_an_engine_that_does_not_come_back_fails_within_the_bound() -> None:
    sleeps: list[float] = []
    start = Flaky(*[_gone() for _ in range(50)])
    with pytest.raises(EngineUnavailable):
        with_engine_retry(start, what="t", sleep=sleeps.append)
    assert start.calls == TRIES and 30 < sum(sleeps) <= WITHIN


def test_the_runtimes_sandboxes_retry_a_start_that_met_the_engine_away(monkeypatch: pytest.MonkeyPatch) -> None:
    from sandbox.docker import DockerSandbox

    start = Flaky(_gone(), _gone())
    sleeps: list[float] = []
    monkeypatch.setattr(DockerSandbox, "start", start)
    monkeypatch.setattr(time, "sleep", sleeps.append)
    factory = Runtime(Settings(_env_file=None)).sandboxes({"k": "v"})  # type: ignore[call-arg]
    assert factory(SandboxConfig(image="img"), "run1") == "sandbox"
    assert start.calls == 3 and sleeps == [1, 2]
