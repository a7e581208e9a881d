"""LitellmModel against the real chat-completions HTTP shape (respx intercepts litellm's httpx client)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from bot.agent.config import ModelConfig
from bot.agent.errors import (
    ContextWindowExceeded,
    ModelAuthError,
    ModelBadRequest,
    ModelNotFound,
    ModelUnavailable,
)
from bot.agent.model import LitellmModel

API_BASE = "http://127.0.0.1:8999/v1"
URL = f"{API_BASE}/chat/completions"
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hi", "extra": {"timestamp": 1.0, "returncode": 0}},
]


def completion(content: str = "THOUGHT: ok", prompt_tokens: int = 12, completion_tokens: int = 3) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "served",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def error(status: int, message: str = "nope") -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "error", "code": status}})


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


def vllm(**config: Any) -> LitellmModel:
    settings: dict[str, Any] = {
        "model_name": "hosted_vllm/served",
        "api_base": API_BASE,
        "retry_wait_seconds": 0,
        "max_attempts": 3,
        **config,
    }
    return LitellmModel(ModelConfig(**settings))


def test_reply_tokens_and_no_price(api: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    route = api.post(URL).mock(return_value=completion("THOUGHT: ok", 12, 3))
    model = vllm(model_kwargs={"temperature": 0.0})
    model.query(MESSAGES)
    reply = model.query(MESSAGES)
    assert (reply.content, reply.prompt_tokens, reply.completion_tokens, reply.cost) == (
        "THOUGHT: ok",
        12,
        3,
        0.0,
    )
    assert reply.finish_reason == "stop"
    body = json.loads(route.calls[0].request.content)
    assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert (body["model"], body["temperature"]) == ("served", 0.0)
    out = capsys.readouterr().out  # no price is normal for a self-hosted model: said once, no litellm noise
    assert out.count("model_has_no_price") == 1 and "LiteLLM" not in out and "Provider List" not in out


def test_a_known_model_is_priced_and_gets_the_api_key(api: respx.MockRouter) -> None:
    route = api.post("http://127.0.0.1:8999/v1/chat/completions").mock(return_value=completion())
    model = LitellmModel(ModelConfig(model_name="openai/gpt-4o-mini", api_base=API_BASE), api_key="sk-test")
    assert model.query(MESSAGES).cost > 0
    assert route.calls[0].request.headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    "failure",
    [error(500), error(503), error(502), error(429), httpx.ConnectError("connection refused")],
    ids=["500", "503", "502", "429", "connect"],
)
def test_transient_failures_are_retried(api: respx.MockRouter, failure: httpx.Response | Exception) -> None:
    route = api.post(URL).mock(side_effect=[failure, failure, completion("back")])
    assert vllm().query(MESSAGES).content == "back"
    assert route.call_count == 3


def test_an_unreachable_server_is_model_unavailable_naming_the_url(api: respx.MockRouter) -> None:
    route = api.post(URL).mock(side_effect=httpx.ConnectError("connection refused"))
    with pytest.raises(ModelUnavailable, match=r"127\.0\.0\.1:8999"):
        vllm(max_attempts=2).query(MESSAGES)
    assert route.call_count == 2


@pytest.mark.parametrize(
    ("response", "ours"),
    [
        (
            error(400, "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens"),
            ContextWindowExceeded,
        ),
        (error(400, "temperature must be a number"), ModelBadRequest),
        (error(401, "invalid api key"), ModelAuthError),
        (error(404, "The model `served` does not exist."), ModelNotFound),
    ],
    ids=["context-window", "400", "401", "404"],
)
def test_permanent_failures_are_not_retried(api: respx.MockRouter, response: httpx.Response, ours: type) -> None:
    route = api.post(URL).mock(return_value=response)
    with pytest.raises(ours):
        vllm().query(MESSAGES)
    assert route.call_count == 1


def test_importing_the_agent_does_not_import_litellm_or_docker() -> None:
    code = (
        "import sys, bot.agent, bot.agent.loop, bot.agent.model, bot.agent.config, bot.trajectory\n"
        "from bot.agent import Agent, LitellmModel, load_config\n"
        "print(sorted(m for m in ('litellm', 'docker', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def reasoning_completion(usage: dict[str, Any], content: str | None = None) -> httpx.Response:
    message = {
        "role": "assistant",
        "content": content,
        "reasoning_content": "First, the parser",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}],
    }
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "served", "choices": [choice]}
    return httpx.Response(200, json=body | {"usage": usage})


def test_a_tool_call_reply_keeps_its_calls_reasoning_and_message(api: respx.MockRouter) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 40, "completion_tokens_details": {"reasoning_tokens": 30}}
    route = api.post(URL).mock(return_value=reasoning_completion(usage))
    reply = vllm(model_class="litellm").query(MESSAGES)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("c1", "bash", '{"command":"ls"}')]
    assert (reply.reasoning_content, reply.reasoning_tokens, reply.completion_tokens) == ("First, the parser", 30, 40)
    assert reply.content == "" and reply.as_message()["content"] is None  # sent back as the server sent it
    body = json.loads(route.calls[0].request.content)
    assert body["tools"][0]["function"]["name"] == "bash"


def test_reasoning_reported_apart_from_the_completion_is_counted_too(api: respx.MockRouter) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 300}}
    api.post(URL).mock(return_value=reasoning_completion(usage, content="ok"))
    reply = vllm().query(MESSAGES)
    assert (reply.completion_tokens, reply.reasoning_tokens) == (305, 300)


def test_a_text_config_sends_no_tools(api: respx.MockRouter) -> None:
    route = api.post(URL).mock(return_value=completion())
    vllm(model_class="litellm_textbased").query(MESSAGES)
    assert "tools" not in json.loads(route.calls[0].request.content)
