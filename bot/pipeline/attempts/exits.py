"""The agent's exit statuses, in one table: the outcome each ends a GitHub run with, and what to do after it locally."""

from __future__ import annotations

from typing import NamedTuple

from bot.jobs import Outcome

SUBMITTED = "Submitted"
CANCELLED = "Cancelled"  # the agent saw its stop flag (the job was stopped, or its budget spent)


class Exit(NamedTuple):
    """How one exit status without a submission reads: its outcome on GitHub, its hint for `mini-fix run`."""

    outcome: Outcome
    hint: str


EXITS = {
    "LimitsExceeded": Exit(
        Outcome.LIMITS, "step or cost limit reached: raise agent.step_limit in a --config file, or narrow the task"
    ),
    "TimeExceeded": Exit(
        Outcome.LIMITS, "wall-time limit reached: raise agent.wall_time_limit_seconds, or narrow the task"
    ),
    "TokenLimitExceeded": Exit(
        Outcome.LIMITS, "the token budget was spent: raise agent.token_limit, or narrow the task"
    ),
    "RepeatedFormatError": Exit(
        Outcome.FORMAT_ERRORS,
        "the model kept replying without exactly one ```mswea_bash_command block: "
        "check that --model names an instruction-following model and the prompt suits it",
    ),
    "ContextWindowExceeded": Exit(
        Outcome.CONTEXT_WINDOW, "the history outgrew the context: serve the model with a larger --max-model-len"
    ),
    "ModelUnavailable": Exit(
        Outcome.MODEL_UNAVAILABLE, "the model server could not be reached: is vLLM running, and is --api-base right?"
    ),
    "ModelTimeout": Exit(
        Outcome.MODEL_UNAVAILABLE,
        "the model did not answer within model.model_kwargs.timeout seconds: cap its replies with "
        "model.model_kwargs.max_tokens, or raise the timeout",
    ),
    "ModelAuthError": Exit(
        Outcome.MODEL_UNAVAILABLE, "the model server refused the credentials: set MINIFIX_MODEL_API_KEY"
    ),
    "ModelNotFound": Exit(
        Outcome.MODEL_UNAVAILABLE,
        "the server does not serve that model: --model must be hosted_vllm/<served-model-name>",
    ),
    "ModelBadRequest": Exit(
        Outcome.MODEL_UNAVAILABLE, "the model server rejected the request: check the model's kwargs in the config"
    ),
    CANCELLED: Exit(Outcome.CANCELLED, "the run was interrupted"),
}
CRASHED = Exit(Outcome.AGENT_CRASHED, "the agent crashed; see the trajectory")
"""Any other exit status (an exception's name) is a crash."""


def exit_for(exit_status: str) -> Exit:
    """How an exit status other than `Submitted` reads."""
    return EXITS.get(exit_status, CRASHED)


LIMIT_NAMES = {"LimitsExceeded": "step limit", "TimeExceeded": "wall-time limit", "TokenLimitExceeded": "token limit"}
"""The agent's own budget endings, and the limit each names."""


def limit_ended(exit_status: str) -> bool:
    """Whether the agent stopped because it reached one of its own step, token or time limits."""
    return exit_status in LIMIT_NAMES
