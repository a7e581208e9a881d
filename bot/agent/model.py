"""LitellmModel: chat completions from an OpenAI-compatible server (vLLM), retried with tenacity."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import structlog
from tenacity import RetryCallState, Retrying, retry_if_exception_type

from bot import metrics
from bot.agent.config import ModelConfig, missing_api_base
from bot.agent.errors import (
    ContextWindowExceeded,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelNotFound,
    ModelTimeout,
    ModelUnavailable,
)
from bot.agent.model_base import ModelReply, ToolCall
from bot.agent.retry import RetryPolicy
from bot.agent.toolcalls import BASH_TOOL

log = structlog.get_logger(__name__)

# litellm exception names worth another try: the server may come back. Not Timeout: a model too slow for the
# per-call timeout would be as slow again on the same prompt (litellm's Timeout is not an APIConnectionError).
TRANSIENT = (
    "APIConnectionError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)
# Never retried. Order matters: ContextWindowExceededError is a BadRequestError.
PERMANENT: tuple[tuple[str, type[ModelError]], ...] = (
    ("Timeout", ModelTimeout),
    ("ContextWindowExceededError", ContextWindowExceeded),
    ("AuthenticationError", ModelAuthError),
    ("PermissionDeniedError", ModelAuthError),
    ("NotFoundError", ModelNotFound),
    ("BadRequestError", ModelBadRequest),
    ("UnprocessableEntityError", ModelBadRequest),
)


@functools.cache
def import_litellm() -> ModuleType:
    """Import litellm once per process (it takes seconds), offline and quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else it downloads a price list at import
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class LitellmModel:
    """A `Model` backed by `litellm.completion`: transient failures retried, the rest become ModelErrors."""

    def __init__(
        self, config: ModelConfig, *, api_key: str | None = None, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.config = config
        self.name = config.model_name
        self._api_key = api_key
        self._sleep = sleep
        self._litellm = import_litellm()
        self._transient = tuple(getattr(self._litellm.exceptions, n) for n in TRANSIENT)
        self._permanent = tuple((getattr(self._litellm.exceptions, n), e) for n, e in PERMANENT)
        self._has_price: bool | None = None

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """Send the history (every key but our `extra`, as upstream) and return the reply with its counts and cost."""
        with metrics.MODEL_SECONDS.time():
            response = self._complete([{k: v for k, v in m.items() if k != "extra"} for m in messages])
        usage = getattr(response, "usage", None)
        prompt, completion, reasoning = token_counts(usage)
        metrics.count_tokens(prompt, completion)
        return reply_from(response, prompt, completion, reasoning, self._cost(response))

    def _complete(self, messages: list[dict[str, Any]]) -> Any:
        if problem := missing_api_base(self.config):  # every try would fail the same way: say so at once
            raise ModelUnavailable(problem)
        policy = RetryPolicy(self.config.max_attempts, self.config.retry_wait_seconds)
        try:
            for attempt in self._retrying(policy):
                with attempt:
                    return self._litellm.completion(**self._request(messages))
        except self._transient as e:
            raise ModelUnavailable(
                f"model {self.name} at {self._where()} unreachable {policy.gave_up}; last error: {_short(e)}"
            ) from e
        except Exception as e:
            ours = self._translate(e)
            if ours is None:
                raise
            raise ours from e
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _request(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        request: dict[str, Any] = {**self.config.model_kwargs, "model": self.name, "messages": messages}
        if self.config.tool_calls:
            request["tools"] = [BASH_TOOL]
        request |= {"num_retries": 0, "max_retries": 0}  # retries live in exactly one layer: ours
        if self.config.api_base:
            request["api_base"] = self.config.api_base
        if self._api_key:
            request["api_key"] = self._api_key
        return request

    def _retrying(self, policy: RetryPolicy) -> Retrying:
        return Retrying(
            stop=policy.stop,
            wait=policy.wait,
            retry=retry_if_exception_type(self._transient),
            sleep=self._sleep,
            before_sleep=self._log_retry,
            reraise=True,
        )

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "model_retry", model=self.name, attempt=state.attempt_number, wait=state.upcoming_sleep, error=_short(error)
        )

    def _translate(self, error: Exception) -> ModelError | None:
        for litellm_type, ours in self._permanent:
            if isinstance(error, litellm_type):
                return ours(self._timed_out() if ours is ModelTimeout else f"model {self.name}: {_short(error)}")
        return None

    def _timed_out(self) -> str:
        """What a per-call timeout means: which timeout, and that the call was not tried again."""
        seconds = self.config.model_kwargs.get("timeout") or self._litellm.request_timeout
        return (
            f"model {self.name} at {self._where()} gave no answer within the per-call timeout of {seconds} s "
            "(model.model_kwargs.timeout); not retried, as the same prompt would be as slow again"
        )

    def _where(self) -> str:
        """The api base as errors show it: comments and the ledger get it, so never its user or password."""
        if not self.config.api_base:
            return "litellm's default endpoint (no api base set)"
        parts = urlsplit(self.config.api_base)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host))

    def _cost(self, response: Any) -> float:
        """Dollar cost when litellm knows a price; self-hosted models have none (asked once)."""
        if self._has_price is False:
            return 0.0
        try:
            cost = float(self._litellm.completion_cost(completion_response=response, model=self.name))
        except Exception:
            cost = 0.0
        if self._has_price is None:
            self._has_price = cost > 0
            if not self._has_price:
                log.info("model_has_no_price", model=self.name, detail="cost budget will not apply")
        return cost


_TOKEN_PRICES = ("input_cost_per_token", "output_cost_per_token", "output_cost_per_reasoning_token",
                 "cache_creation_input_token_cost")  # fmt: skip
_OTHER_TIERS = ("priority", "flex", "batches", "ultrafast", "balanced")  # service tiers mini-fix never asks for


def token_price(name: str) -> float:
    """The highest per-token price litellm knows for model `name`, over prompt, completion, reasoning and cache
    writes and a long context's tiers (a bound on any mix of its tokens); 0 when it knows none (self-hosted)."""
    try:
        info = import_litellm().get_model_info(name)
    except Exception:  # not in litellm's price list
        return 0.0
    found = [
        float(value)
        for key, value in info.items()
        if key.startswith(_TOKEN_PRICES) and not key.endswith(_OTHER_TIERS) and isinstance(value, int | float)
    ]
    return max([0.0, *found])


def _short(error: BaseException | None, limit: int = 300) -> str:
    """An error's text, on one line and capped (a server's error page can be long)."""
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def token_counts(usage: Any) -> tuple[int, int, int]:
    """Prompt, completion and reasoning tokens; completion includes reasoning (OpenAI's and vLLM's usage), unless
    the server reported reasoning apart (more reasoning than completion tokens), then the two are added."""
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", 0) or 0
    return prompt, completion + reasoning if reasoning > completion else completion, reasoning


def reply_from(response: Any, prompt: int, completion: int, reasoning: int, cost: float) -> ModelReply:
    """litellm's response as our reply: the message kept as the server sent it, its calls and reasoning read."""
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(str(c.id), str(c.function.name), str(c.function.arguments)) for c in (message.tool_calls or [])
    )
    return ModelReply(
        content=message.content or "",
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=cost,
        finish_reason=choice.finish_reason,
        tool_calls=calls,
        reasoning_content=getattr(message, "reasoning_content", None) or None,
        reasoning_tokens=reasoning,
        message=message.model_dump(),
    )
