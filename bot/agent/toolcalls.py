"""Tool-call actions, as mini-swe-agent 2.x's `LitellmModel` reads them: one `bash` tool, every call of a reply run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.agent.actions import render
from bot.agent.errors import FormatError
from bot.agent.model_base import ModelReply

# The schema upstream sends with every request, key for key: a model trained on it sees what it was trained on.
BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
            "required": ["command"],
        },
    },
}

NO_CALLS = "No tool calls found in the response. Every response MUST include at least one tool call."


@dataclass(frozen=True)
class ToolAction:
    """One bash call of a reply: the command and the id its observation answers."""

    command: str
    tool_call_id: str


def parse_tool_calls(reply: ModelReply, *, format_error_template: str) -> list[ToolAction]:
    """Every call of the reply, in order; no call, or any call unusable, raises FormatError (upstream's texts)."""
    variables = {"finish_reason": reply.finish_reason, "reasoning_cut_off": reasoning_cut_off(reply)}
    if not reply.tool_calls:
        raise _format_error(format_error_template, NO_CALLS, has_tool_calls=False, **variables)
    actions = []
    for call in reply.tool_calls:
        command, error = _command(call.name, call.arguments)
        if error:
            raise _format_error(format_error_template, error, has_tool_calls=True, **variables)
        actions.append(ToolAction(command, call.id))
    return actions


def reasoning_cut_off(reply: ModelReply) -> bool:
    """The reply hit its token cap while still reasoning: reasoning text, no answer text, no call."""
    return reply.finish_reason == "length" and bool(reply.reasoning_content) and not reply.content.strip()


def _command(name: str, arguments: str) -> tuple[str, str]:
    """The call's command, or upstream's error text for it (the errors joined, as upstream words them)."""
    error, args = "", {}
    try:
        args = json.loads(arguments)
    except Exception as e:  # upstream's catch-all: any argument text that does not parse is the model's error
        error = f"Error parsing tool call arguments: {e}."
    if name != "bash":
        error += f"Unknown tool '{name}'."
    if not isinstance(args, dict) or "command" not in args:
        error += "Missing 'command' argument in bash tool call."
    return ("" if error else str(args["command"])), error.strip()


def _format_error(template: str, error: str, **variables: Any) -> FormatError:
    content = render(template, actions=[], error=error, **variables)
    return FormatError({"role": "user", "content": content, "extra": {"interrupt_type": "FormatError"}})


def tool_message(action: ToolAction, observation: dict[str, Any]) -> dict[str, Any]:
    """The observation of one call, as the `tool` message that answers it."""
    return {**observation, "role": "tool", "tool_call_id": action.tool_call_id}
