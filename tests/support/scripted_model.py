"""ScriptedModel: the Model protocol answering from a list, recording every request it was sent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bot.agent.model_base import ModelReply, ToolCall

Script = str | ModelReply | BaseException


def bash(command: str, thought: str = "THOUGHT: next step.") -> str:
    """A well-formed reply running `command`."""
    return f"{thought}\n\n```mswea_bash_command\n{command}\n```"


def tool_reply(*commands: str, content: str | None = "Running it.", finish_reason: str = "tool_calls") -> ModelReply:
    """A reply calling the `bash` tool once per command (ids call_0, call_1, ...), as a tool-calling server sends it."""
    calls = tuple(ToolCall(f"call_{i}", "bash", json.dumps({"command": c})) for i, c in enumerate(commands))
    wire = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
    message = {"role": "assistant", "content": content, "tool_calls": wire or None}
    return ModelReply(content or "", 100, 10, 0.0, finish_reason, tool_calls=calls, message=message)


class ScriptedModel:
    """Replies in order: a string becomes a reply with fixed token counts; an exception is raised instead."""

    def __init__(
        self,
        replies: Sequence[Script],
        *,
        prompt_tokens: int = 100,
        completion_tokens: int = 10,
        cost: float = 0.0,
    ) -> None:
        self.name = "scripted"
        self.replies = list(replies)
        self.usage = (prompt_tokens, completion_tokens, cost)
        self.requests: list[list[dict[str, Any]]] = []

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """Record the request (every key but `extra`, as a real client sends them) and answer the next reply."""
        self.requests.append([{k: v for k, v in m.items() if k != "extra"} for m in messages])
        if len(self.requests) > len(self.replies):
            raise AssertionError(f"script exhausted after {len(self.replies)} replies")
        reply = self.replies[len(self.requests) - 1]
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ModelReply):
            return reply
        prompt, completion, cost = self.usage
        return ModelReply(reply, prompt, completion, cost, finish_reason="stop")
