"""The exceptions that steer the agent loop, and the model errors the loop turns into exit statuses."""

from __future__ import annotations

from typing import Any


class InterruptAgentFlow(Exception):
    """Ends the current step early; the loop appends `messages` to the history."""

    def __init__(self, *messages: dict[str, Any]) -> None:
        self.messages = messages
        super().__init__(*(m.get("content", "") for m in messages))


class Submitted(InterruptAgentFlow):
    """The agent ran the submit command; the run is over."""


class LimitsExceeded(InterruptAgentFlow):
    """A step or cost budget is spent."""


class TimeExceeded(LimitsExceeded):
    """The wall-time budget is spent."""


class TokenLimitExceeded(LimitsExceeded):
    """The token budget (prompt + completion, all calls together) is spent."""


class Cancelled(InterruptAgentFlow):
    """Someone asked the run to stop (label removed, issue closed, newer trigger)."""


class FormatError(InterruptAgentFlow):
    """The reply did not hold exactly one action."""


class RepeatedFailure(InterruptAgentFlow):
    """The reply's command just ran too often in a row with the same output; it is not run again."""


class ModelError(Exception):
    """The model could not answer; the subclass name becomes the run's exit status."""


class ContextWindowExceeded(ModelError):
    """The history no longer fits the model's context window."""


class ModelUnavailable(ModelError):
    """The model server could not be reached, or kept failing, after every retry."""


class ModelTimeout(ModelError):
    """The model did not answer within the per-call timeout; not retried, the same prompt would be as slow."""


class ModelAuthError(ModelError):
    """The model server refused our credentials (401/403)."""


class ModelNotFound(ModelError):
    """The model server does not serve this model (404)."""


class ModelBadRequest(ModelError):
    """The model server rejected the request as malformed (400/422)."""


def exit_message(exit_status: str, content: str | None = None, submission: str = "", **extra: Any) -> dict[str, Any]:
    """The final `role: exit` message mini-swe-agent trajectories end with."""
    return {
        "role": "exit",
        "content": exit_status if content is None else content,
        "extra": {"exit_status": exit_status, "submission": submission, **extra},
    }
