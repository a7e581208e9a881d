"""Text-based actions: find the one command in a reply, spot the submission, render templates."""

from __future__ import annotations

import functools
import re
from typing import Any

from jinja2 import StrictUndefined, Template

from bot.agent.config import ACTION_REGEX
from bot.agent.errors import FormatError, Submitted, exit_message
from bot.agent.fences import action_spans, find_actions
from sandbox.base import ExecResult

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MAX_SCANNED = 100_000  # a custom action regex sees at most this much of a reply


def render(template: str, **variables: Any) -> str:
    """Render a Jinja2 template; a variable it uses but was not given is an error."""
    return str(_compile(template).render(**variables))


@functools.lru_cache(maxsize=64)
def _compile(template: str) -> Template:
    # Compiling costs milliseconds and the observation template is rendered at every step.
    compiled: Template = Template(template, undefined=StrictUndefined)
    return compiled


def parse_action(
    content: str,
    *,
    action_regex: str,
    format_error_template: str,
    finish_reason: str | None,
    reasoning_cut_off: bool = False,
) -> str:
    """The reply's one command; zero or several raise FormatError with the message to send instead."""
    if action_regex == ACTION_REGEX:  # the default: the same matches in linear time (a hostile reply cannot stall us)
        actions = find_actions(content)
    else:
        actions = [a.strip() for a in re.findall(action_regex, content[:MAX_SCANNED], re.DOTALL)]
    if len(actions) == 1:
        return str(actions[0])
    error = f"Expected exactly 1 action, found {len(actions)}."  # mini-swe-agent's wording, seen by the model
    variables = {"finish_reason": finish_reason, "reasoning_cut_off": reasoning_cut_off}
    message = render(format_error_template, actions=actions, error=error, **variables)
    raise FormatError(
        {
            "role": "user",
            "content": message,
            "extra": {"interrupt_type": "FormatError", "n_actions": len(actions), "model_response": content},
        }
    )


def first_of_several(content: str) -> str | None:
    """The reply cut just after its first action block when it holds several (default regex), else None."""
    spans = action_spans(content)
    return content[: spans[0][1]] if len(spans) > 1 else None


def check_submitted(result: ExecResult) -> None:
    """Raise Submitted when the first non-blank output line is the marker and the command succeeded."""
    lines = result.output.lstrip().splitlines(keepends=True)
    if lines and lines[0].strip() == SUBMIT_MARKER and result.returncode == 0:
        submission = "".join(lines[1:])
        raise Submitted(exit_message("Submitted", submission, submission=submission))
