"""The model client against a scripted server answering 429/503 with `Retry-After`, or too slowly: what it waits,
when it gives up, and what each ending says."""

from __future__ import annotations

import email.utils
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.agent.config import ModelConfig, load_config
from bot.agent.errors import ModelTimeout, ModelUnavailable
from bot.agent.loop import Agent
from bot.agent.model import LitellmModel
from bot.agent.model_base import ModelReply, deadline, seconds_left
from bot.cli.local_run import LocalRunRequest, run_local
from bot.settings import Settings
from tests.support.fake_sandbox import FakeSandbox
from tests.support.model_server import Refusal, ScriptedModelServer
from tests.support.scripted_model import bash

MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


@pytest.fixture
def sleeps() -> list[float]:
    return []


def model_for(server: ScriptedModelServer, sleeps: list[float], **config: Any) -> LitellmModel:
    settings: dict[str, Any] = {"model_name": "hosted_vllm/scripted", "api_base": server.api_base, **config}
    return LitellmModel(ModelConfig(**settings), sleep=sleeps.append)


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(request.param) as server:
        yield server


@pytest.mark.parametrize("served", [[Refusal(429, {"Retry-After": "10"}), "back"]], indirect=True)
def test_a_429_is_retried_after_the_servers_retry_after(served: ScriptedModelServer, sleeps: list[float]) -> None:
    assert model_for(served, sleeps).query(MESSAGES).content == "back"
    assert sleeps == [10.0] and len(served.requests) == 2  # not our 2 s backoff


def test_a_503_retry_after_as_an_http_date_is_waited_out(sleeps: list[float]) -> None:
    target = int(time.time() + 30)  # an HTTP date has whole seconds
    when = email.utils.formatdate(target, usegmt=True)
    with ScriptedModelServer([Refusal(503, {"Retry-After": when}), "back"]) as server:
        before = time.time()
        assert model_for(server, sleeps).query(MESSAGES).content == "back"
        after = time.time()
    # the wait runs to that date from when it was read (however slow the machine is in between)
    assert len(sleeps) == 1 and target - after - 1 <= sleeps[0] <= target - before + 1


@pytest.mark.parametrize("served", [[Refusal(500), Refusal(502), "back"]], indirect=True)
def test_without_retry_after_the_wait_doubles(served: ScriptedModelServer, sleeps: list[float]) -> None:
    assert model_for(served, sleeps, retry_wait_seconds=2).query(MESSAGES).content == "back"
    assert sleeps == [2.0, 4.0]


@pytest.mark.parametrize("served", [[Refusal(429, {"Retry-After": "120"}), "never asked"]], indirect=True)
def test_a_retry_after_past_the_runs_wall_time_ends_the_call_saying_so(
    served: ScriptedModelServer, sleeps: list[float]
) -> None:
    with deadline(30), pytest.raises(ModelUnavailable) as caught:
        model_for(served, sleeps).query(MESSAGES)
    assert sleeps == [] and len(served.requests) == 1
    text = str(caught.value)
    assert served.api_base in text and "after 1 try: the next wait, 120 s (the server's Retry-After)" in text
    left = re.search(r"longer than the (\d+) s left", text)  # the run's wall time left, read as the call ended
    assert left is not None and 20 <= int(left.group(1)) <= 30
    assert "last error" in text and "refused by the script" in text


@pytest.mark.parametrize("served", [[Refusal(503)] * 3], indirect=True)
def test_unreachable_names_the_api_base_the_tries_and_the_last_error(
    served: ScriptedModelServer, sleeps: list[float]
) -> None:
    with pytest.raises(ModelUnavailable) as caught:
        model_for(served, sleeps, max_attempts=3, retry_wait_seconds=0).query(MESSAGES)
    text = str(caught.value)
    assert f"at {served.api_base} unreachable after 3 tries; last error: " in text and "refused by the script" in text
    assert len(served.requests) == 3


def test_a_per_call_timeout_names_the_timeout_and_is_not_retried(sleeps: list[float]) -> None:
    with ScriptedModelServer(["too late", "too late"], delay=1) as server:  # four times the timeout
        model = model_for(server, sleeps, model_kwargs={"timeout": 0.25})
        with pytest.raises(ModelTimeout) as caught:
            model.query(MESSAGES)
        assert len(server.requests) == 1
    text = str(caught.value)
    assert "per-call timeout of 0.25 s" in text and "not retried" in text and "unreachable" not in text
    assert sleeps == []


class DeadlineProbe:
    """A model that records how long the agent lets each call take, and submits."""

    name = "probe"

    def __init__(self) -> None:
        self.left: list[float | None] = []

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        self.left.append(seconds_left())
        return ModelReply(SUBMIT)


@pytest.mark.parametrize(("wall", "bounded"), [(100, True), (0, False)])
def test_the_agent_passes_its_remaining_wall_time_down_to_each_call(wall: int, bounded: bool) -> None:
    probe = DeadlineProbe()
    config = load_config(overrides={"agent": {"wall_time_limit_seconds": wall}})
    Agent(probe, FakeSandbox(), config).run("fix it")
    [left] = probe.left
    assert (left is not None and 90 < left <= 100) if bounded else left is None
    assert seconds_left() is None  # nothing outlives the call


def test_mini_fix_run_without_an_api_base_fails_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], [*identity, "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    settings = Settings(data_dir=tmp_path / "data", model="hosted_vllm/served", _env_file=None)
    assert run_local(LocalRunRequest(repo=repo, task="fix it", output=tmp_path / "out"), settings) == 2
    err = capsys.readouterr().err
    assert "hosted_vllm/served has no default endpoint" in err and "--api-base" in err
    assert not (tmp_path / "out").exists()


def test_the_model_without_an_api_base_fails_at_once_not_after_retries(sleeps: list[float]) -> None:
    model = LitellmModel(ModelConfig(model_name="hosted_vllm/served"), sleep=sleeps.append)
    with pytest.raises(ModelUnavailable, match="no api base is set"):
        model.query(MESSAGES)
    assert sleeps == []


def test_an_api_base_with_credentials_is_named_without_them(sleeps: list[float]) -> None:
    with ScriptedModelServer([Refusal(503)] * 2) as server:
        with_password = server.api_base.replace("http://", "http://vllm:s3cr3t-pass@")
        model = model_for(server, sleeps, api_base=with_password, max_attempts=2, retry_wait_seconds=0)
        with pytest.raises(ModelUnavailable) as caught:
            model.query(MESSAGES)
    assert "s3cr3t-pass" not in str(caught.value) and server.api_base in str(caught.value)
