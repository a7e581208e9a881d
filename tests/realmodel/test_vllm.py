"""The App's agent loop against a real vLLM server (CPU build, Qwen2.5-Coder-0.5B) through litellm's hosted_vllm.

vLLM's own records decide: its prefix-cache counters (tokens) for the cache reuse of each step, its access log for
how many requests a run made. Whether the small model fixes the bug is not the point here.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.agent import profiles
from bot.agent.config import MiniFixAgentConfig, deep_merge, load_config
from bot.agent.loop import Agent, AgentResult, StepEvent
from bot.agent.model import LitellmModel
from bot.trajectory import TrajectoryWriter
from sandbox.base import SandboxConfig, SandboxError
from sandbox.docker import DockerSandbox
from tests.realmodel.conftest import TIER_CONFIG
from tests.support.buggy_repos import CALC, build
from tests.support.tiers import honour_realmodel_opt_out, setup_failed
from tests.support.vllm_server import VllmServer, describe, script

pytestmark = [pytest.mark.docker, pytest.mark.realmodel]

ROOT = Path(__file__).resolve().parents[2]
# The 0.5B gives no command at all with prompts/agent.yaml (a THOUGHT line, then nothing); with the earlier
# prompt's example block in front of it, it copies the example and so runs real commands. The cache behaviour
# checked here belongs to the loop (append-only history), whatever the prompt says.
EXAMPLE_PROMPT = ROOT / "bench" / "real_model_before.yaml"
SETUP_SECONDS = 1800  # a fresh cache installs vLLM (~3.4 GB) and converts the weights before the ~70 s start
IMAGE = os.environ.get("MINIFIX_SANDBOX_IMAGE", "mini-fix-sandbox:latest")


@pytest.fixture(scope="module")
def vllm() -> Iterator[VllmServer]:
    """vLLM on 127.0.0.1, started for these tests unless it was already running (then left running)."""
    honour_realmodel_opt_out()
    was_running = script("status").returncode == 0
    try:
        started = script("start", timeout=SETUP_SECONDS)
    except Exception as e:  # a timeout, or the script missing
        setup_failed("vLLM", f"scripts/ensure-vllm.sh start: {e}")
    if started.returncode != 0:
        setup_failed("vLLM", f"scripts/ensure-vllm.sh start exited {started.returncode}:\n{started.stderr[-3000:]}")
    yield describe()
    if not was_running:
        script("stop")


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[DockerSandbox]:
    """A real sandbox holding the calc repository (its add() subtracts)."""
    config = SandboxConfig(image=IMAGE, memory="512m", timeout=30, wall_time_seconds=900)
    try:
        box = DockerSandbox.start(config, f"test-vllm-{uuid.uuid4().hex[:8]}")
    except SandboxError as e:
        pytest.fail(f"the real-model tier needs the Docker sandbox ({e}); run scripts/ensure-docker.sh", pytrace=False)
    try:
        box.copy_in(build(CALC, tmp_path / "calc"))
        yield box
    finally:
        box.close()


@dataclass
class CacheStep:
    """One model call as vLLM counted it: prompt tokens looked up in the prefix cache, and found there."""

    step: int
    prompt_tokens: int
    queries: float
    hits: float
    completion_tokens: int
    seconds: float


class CacheRecorder:
    """An `on_step` hook: vLLM's prefix-cache counters read after every model call."""

    def __init__(self, server: VllmServer) -> None:
        self.server = server
        self.steps: list[CacheStep] = []
        self.last = server.counters()
        self.prompt_tokens = self.completion_tokens = 0
        self.seconds = 0.0

    def __call__(self, event: StepEvent) -> None:
        now = self.server.counters()
        delta = {k: now.get(k, 0.0) - self.last.get(k, 0.0) for k in now}
        self.steps.append(
            CacheStep(
                event.step,
                event.prompt_tokens - self.prompt_tokens,
                delta["vllm:prefix_cache_queries_total"],
                delta["vllm:prefix_cache_hits_total"],
                event.completion_tokens - self.completion_tokens,
                event.elapsed_seconds - self.seconds,
            )
        )
        self.last, self.prompt_tokens = now, event.prompt_tokens
        self.completion_tokens, self.seconds = event.completion_tokens, event.elapsed_seconds

    def report(self) -> str:
        """One line per step, then the hit rate over every step after the first."""
        lines = [
            f"step {s.step}: prompt {s.prompt_tokens} tokens, {s.hits:.0f}/{s.queries:.0f} from the prefix cache "
            f"({s.hits / max(s.queries, 1):.1%}); reply {s.completion_tokens} tokens in {s.seconds:.1f}s"
            for s in self.steps
        ]
        later = self.steps[1:]
        rate = sum(s.hits for s in later) / max(sum(s.queries for s in later), 1)
        return "\n".join([*lines, f"steps after the first: {rate:.1%} of prompt tokens from vLLM's prefix cache"])


def agent_config(server: VllmServer, path: Path | None = None, **changes: Any) -> MiniFixAgentConfig:
    """A config file (default prompts/agent.yaml) with the tier's budgets, pointed at the vLLM server."""
    where = {"model": {"model_name": server.litellm_name, "api_base": server.api_base}}
    return load_config(path, deep_merge(deep_merge(TIER_CONFIG, where), changes))


def run_agent(
    server: VllmServer,
    sandbox: DockerSandbox,
    config: MiniFixAgentConfig,
    task: str,
    *,
    api_key: str | None = None,
    on_step: Any = None,
    trajectory: TrajectoryWriter | None = None,
) -> AgentResult:
    """One run of the App's agent with the production model class."""
    model = LitellmModel(config.model, api_key=server.api_key if api_key is None else api_key)
    agent = Agent(model, sandbox, config, on_step=on_step, trajectory=trajectory)
    return agent.run(task, **sandbox.template_vars())


def test_every_step_after_the_first_is_served_from_the_prefix_cache(
    vllm: VllmServer, sandbox: DockerSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No format-error stop (a 0.5B misformats often) and a dollar budget that must not trip on an unpriced model.
    config = agent_config(
        vllm,
        EXAMPLE_PROMPT,
        agent={"step_limit": 3, "max_consecutive_format_errors": 0, "cost_limit": 1.0},
        model={"model_kwargs": {"max_tokens": 96}},
    )
    recorder = CacheRecorder(vllm)
    writer = TrajectoryWriter(tmp_path / "trajectory.json", secrets=[vllm.api_key])
    result = run_agent(vllm, sandbox, config, CALC.issue, on_step=recorder, trajectory=writer)
    with capsys.disabled():
        print(f"\nvLLM prefix cache ({vllm.model}, block size {vllm.block_size}):\n{recorder.report()}")
    steps = recorder.steps
    assert result.exit_status in {"Submitted", "LimitsExceeded"}, result.messages[-1]
    assert len(steps) == result.steps >= 3, recorder.report()
    # vLLM looked up exactly the prompt litellm reported, at every step.
    assert [s.queries for s in steps] == [s.prompt_tokens for s in steps], recorder.report()
    # The whole previous prompt comes back from the cache (bar the partial blocks at its end) ...
    for before, step in itertools.pairwise(steps):
        assert step.hits >= before.prompt_tokens - 2 * vllm.block_size, recorder.report()
    # ... so that after the first step almost every prompt token is a hit.
    later = steps[1:]
    assert sum(s.hits for s in later) >= 0.9 * sum(s.queries for s in later), recorder.report()
    # Real actions ran in the sandbox; an unpriced model costs nothing and breaks no budget.
    observations = [m for m in result.messages if "returncode" in m.get("extra", {})]
    assert observations, recorder.report()
    assert result.cost == 0.0
    saved = json.loads((tmp_path / "trajectory.json").read_text())
    assert saved["info"]["model_stats"] == {"instance_cost": 0.0, "api_calls": result.steps}
    assert vllm.api_key not in (tmp_path / "trajectory.json").read_text()


def test_a_prompt_over_max_model_len_ends_the_run_with_one_request(vllm: VllmServer, sandbox: DockerSandbox) -> None:
    huge_issue = "The parser drops this token: xylophone. " * (vllm.max_model_len // 2)
    mark = vllm.log_mark()
    result = run_agent(vllm, sandbox, agent_config(vllm), huge_issue)
    assert result.exit_status == "ContextWindowExceeded", result.messages[-1]
    assert "maximum context length" in result.messages[-1]["content"]
    assert result.steps == 1
    assert vllm.chat_requests(mark) == [400]  # rejected once, never retried


def test_a_wrong_api_key_ends_the_run_with_one_request(vllm: VllmServer, sandbox: DockerSandbox) -> None:
    mark = vllm.log_mark()
    result = run_agent(vllm, sandbox, agent_config(vllm), CALC.issue, api_key="not-the-key")
    assert result.exit_status == "ModelAuthError", result.messages[-1]
    assert result.steps == 1
    assert vllm.chat_requests(mark) == [401]
    assert "not-the-key" not in json.dumps(result.messages)


def test_the_tool_call_profile_runs_real_tool_calls(vllm: VllmServer, sandbox: DockerSandbox) -> None:
    # vLLM parses the model's hermes-style calls (--enable-auto-tool-choice --tool-call-parser hermes). Left to
    # choose (upstream's request), the 0.5B writes its call as JSON text in the content (probed 2026-12-02:
    # finish_reason stop, no tool_calls); `tool_choice: required` has vLLM's guided decoding hold it to a real
    # call, which is what this test is about: real tool calls from a real server, executed by the loop.
    config = agent_config(
        vllm,
        profiles.profile_path("toolcall"),
        agent={"step_limit": 3, "max_consecutive_format_errors": 0},
        model={"model_kwargs": {"max_tokens": 128, "tool_choice": "required"}},
    )
    assert config.model.tool_calls and config.profile == "toolcall"
    result = run_agent(vllm, sandbox, config, CALC.issue)
    assert result.exit_status in {"Submitted", "LimitsExceeded"}, result.messages[-1]
    calls = [c for m in result.messages if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
    answers = [m for m in result.messages if m["role"] == "tool"]
    assert calls and answers, [m.get("content") for m in result.messages[2:]]
    # Every executed call was answered by its own tool message, with the sandbox's real exit code.
    assert {m["tool_call_id"] for m in answers} <= {c["id"] for c in calls}
    assert all(isinstance(m["extra"]["returncode"], int) for m in answers)
