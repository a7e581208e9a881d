"""The agent: a linear history of messages, one bash action per model reply, ended by an exception."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bot.agent.actions import check_submitted, first_of_several, parse_action, render
from bot.agent.config import ACTION_REGEX, MiniFixAgentConfig
from bot.agent.errors import (
    Cancelled,
    FormatError,
    InterruptAgentFlow,
    LimitsExceeded,
    ModelError,
    RepeatedFailure,
    TimeExceeded,
    TokenLimitExceeded,
    exit_message,
)
from bot.agent.model_base import Model, ModelReply, deadline
from bot.agent.streak import Streak
from bot.agent.toolcalls import ToolAction, parse_tool_calls, reasoning_cut_off, tool_message
from bot.trajectory import RunStats, TrajectoryWriter
from sandbox.base import ExecResult, Sandbox


@dataclass
class StepEvent:
    """What one model call led to, for progress reports."""

    step: int
    step_limit: int
    command: str | None
    returncode: int | None
    prompt_tokens: int
    completion_tokens: int
    elapsed_seconds: float
    format_error: bool


@dataclass
class AgentResult:
    """How a run ended and what it cost."""

    exit_status: str
    submission: str
    steps: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    elapsed_seconds: float
    messages: list[dict[str, Any]]
    detail: str = ""
    """What the exit message says beyond its status (a model error's text), '' when nothing."""


class Agent:
    """Runs one task (one instance per run): query the model, run its action, append the result, repeat."""

    def __init__(
        self,
        model: Model,
        sandbox: Sandbox,
        config: MiniFixAgentConfig,
        *,
        trajectory: TrajectoryWriter | None = None,
        on_step: Callable[[StepEvent], None] | None = None,
        cancel: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model, self.sandbox, self.config = model, sandbox, config
        self.trajectory, self.on_step, self.cancel, self.clock = trajectory, on_step, cancel, clock
        self.messages: list[dict[str, Any]] = []
        self.n_calls = self.prompt_tokens = self.completion_tokens = self.format_errors = 0
        self.cost = 0.0
        self.streak: Streak | None = None  # the last command run and how many times in a row, unchanged
        self.extra_vars: dict[str, Any] = {}
        self.started = clock()
        self.event: StepEvent | None = None

    def run(self, task: str, **extra_template_vars: Any) -> AgentResult:
        """Run until the agent submits or a budget, the model or a cancel ends it."""
        self.extra_vars = {"task": task, **extra_template_vars}
        self.started = self.clock()
        self.messages = []
        self.add(
            {"role": "system", "content": self.render(self.config.agent.system_template)},
            {"role": "user", "content": self.render(self.config.agent.instance_template)},
        )
        while self.messages[-1]["role"] != "exit":
            self.event = None
            try:
                self.step()
                self.format_errors = 0
            except FormatError as e:
                self.on_format_error(e)
            except InterruptAgentFlow as e:
                self.add(*e.messages)
            except ModelError as e:
                self.add(exit_message(type(e).__name__, str(e)))
            except Exception as e:
                self.add(exit_message(type(e).__name__, str(e), traceback=traceback.format_exc()))
                raise
            finally:
                self.save()
            if self.event and self.on_step:
                self.on_step(self.event)
        return self.result()

    def step(self) -> None:
        """One model call and the execution of what it asks for."""
        self.check_limits()
        raw = self.query()
        if self.config.model.tool_calls:
            self.run_tool_calls(raw)
            return
        reply = self.first_action_only(raw)
        command = self.parse_action(reply)
        extra = self.reply_extra(reply, [command]) | ({"model_response": raw.content} if reply is not raw else {})
        self.add(reply.as_message() | {"extra": extra})
        self.refuse_repeated_failure(command)
        result = self.execute(command)
        self.add(self.observation(command, result))

    def run_tool_calls(self, reply: ModelReply) -> None:
        """Every call of the reply in order, then one `tool` message per call (upstream's LitellmModel)."""
        try:
            actions = parse_tool_calls(reply, format_error_template=self.config.model.format_error_template)
        except FormatError as e:  # the reply leaves the history, as upstream's; the trajectory keeps what it said
            e.messages[0]["extra"] |= self.reply_extra(reply, []) | {"model_response": reply.as_message()}
            raise
        self.add(reply.as_message() | {"extra": self.reply_extra(reply, [a.command for a in actions], actions)})
        observations = [self.tool_observation(action) for action in actions]
        self.add(*(tool_message(a, o) for a, o in zip(actions, observations, strict=True)))

    def tool_observation(self, action: ToolAction) -> dict[str, Any]:
        """One call's observation: run (a submission ends the run here, later calls unrun), or the guard's refusal."""
        try:
            self.refuse_repeated_failure(action.command)
        except RepeatedFailure as e:
            return e.messages[0]
        return self.observation(action.command, self.execute(action.command))

    def execute(self, command: str) -> ExecResult:
        """Run one command, extend or restart the streak, and end the run if it submitted."""
        result = self.sandbox.execute(command)
        self.event = self.step_event(command, result.returncode)
        self.streak = Streak.after(self.streak, command, result)
        check_submitted(result)
        return result

    def refuse_repeated_failure(self, command: str) -> None:
        """Raise RepeatedFailure instead of running a command that just ran `repeated_failure_limit` times in a row
        with the same output and exit code (when enabled). A refusal leaves the streak as it was: the same command
        sent again is refused again, any other command runs and starts a new streak."""
        streak, limit = self.streak, self.config.agent.repeated_failure_limit
        if streak is None or not streak.refuses(command, limit):
            return
        self.event = self.step_event(command, None)
        content = self.render(
            self.config.agent.repeated_failure_template,
            command=command,
            repeats=streak.count,
            failures=streak.count,  # the name configs written for the old guard use
            returncode=streak.returncode,
        )
        raise RepeatedFailure({"role": "user", "content": content, "extra": {"interrupt_type": "RepeatedFailure"}})

    def check_limits(self) -> None:
        """Raise if the run must stop before the next model call (`0 < limit <= value`, as upstream)."""
        agent = self.config.agent
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(exit_message("Cancelled"))
        if 0 < agent.step_limit <= self.n_calls or 0 < agent.cost_limit <= self.cost:
            raise LimitsExceeded(exit_message("LimitsExceeded"))
        if 0 < agent.wall_time_limit_seconds <= int(self.elapsed()):
            raise TimeExceeded(exit_message("TimeExceeded"))
        if 0 < agent.token_limit <= self.prompt_tokens + self.completion_tokens:
            raise TokenLimitExceeded(exit_message("TokenLimitExceeded"))

    def query(self) -> ModelReply:
        """Ask the model for the next reply and count what it cost."""
        self.n_calls += 1
        with deadline(self.seconds_left()):
            reply = self.model.query(self.messages)
        self.cost += reply.cost
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        return reply

    def first_action_only(self, reply: ModelReply) -> ModelReply:
        """With `first_action_only`, a reply holding several actions cut after its first; else the reply."""
        if not self.config.agent.first_action_only or self.config.model.action_regex != ACTION_REGEX:
            return reply
        cut = first_of_several(reply.content)
        if cut is None:
            return reply
        return replace(reply, content=cut, message=reply.as_message() | {"content": cut})

    def parse_action(self, reply: ModelReply) -> str:
        """The reply's one command; zero or several raise FormatError (the reply itself is not kept)."""
        try:
            return parse_action(
                reply.content,
                action_regex=self.config.model.action_regex,
                format_error_template=self.config.model.format_error_template,
                finish_reason=reply.finish_reason,
                reasoning_cut_off=reasoning_cut_off(reply),
            )
        except FormatError as e:
            e.messages[0]["extra"] |= self.reply_extra(reply, [])
            raise

    def on_format_error(self, error: FormatError) -> None:
        """Keep the format-error message; end the run after too many in a row."""
        self.format_errors += 1
        self.event = self.step_event(None, None, format_error=True)
        self.add(*error.messages)
        if 0 < self.config.agent.max_consecutive_format_errors <= self.format_errors:
            self.add(exit_message("RepeatedFormatError"))

    def observation(self, command: str, result: ExecResult) -> dict[str, Any]:
        """The user message that reports an action's result."""
        timeout_template = self.config.agent.timeout_template
        if timeout_template and result.exception_info:
            content = self.render(timeout_template, action={"action": command}, output=result.output)
        else:
            content = self.render(self.config.model.observation_template, output=result.as_dict())
        extra = {
            "raw_output": result.output,
            "returncode": result.returncode,
            "exception_info": result.exception_info,
            "timestamp": time.time(),
            **result.extra,
        }
        return {"role": "user", "content": content, "extra": extra}

    def template_vars(self) -> dict[str, Any]:
        """Variables for every template: config fields, the sandbox's platform, counters, task, extras."""
        return {
            **self.config.agent.model_dump(),
            **self.config.environment.model_dump(),
            **self.sandbox.template_vars(),
            **self.config.model.model_dump(),
            "n_model_calls": self.n_calls,
            "model_cost": self.cost,
            **self.extra_vars,
        }

    def render(self, template: str, **extra: Any) -> str:
        """Render a template with every template variable plus `extra`."""
        return render(template, **(self.template_vars() | extra))

    def add(self, *messages: dict[str, Any]) -> None:
        """Append to the history; nothing earlier is ever changed."""
        self.messages.extend(messages)

    def reply_extra(
        self, reply: ModelReply, actions: list[str], calls: list[ToolAction] | None = None
    ) -> dict[str, Any]:
        """What we keep about a reply besides its message (never sent to the model)."""
        ids = [c.tool_call_id for c in calls] if calls else [None] * len(actions)
        extra: dict[str, Any] = {
            "actions": [{"command": a} | ({"tool_call_id": i} if i else {}) for a, i in zip(actions, ids, strict=True)],
            "cost": reply.cost,
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens},
            "finish_reason": reply.finish_reason,
            "timestamp": time.time(),
        }
        if reply.reasoning_tokens:
            extra["usage"]["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        if reply.reasoning_content:
            extra["reasoning_content"] = reply.reasoning_content
        return extra

    def step_event(self, command: str | None, rc: int | None, format_error: bool = False) -> StepEvent:
        """A progress report for the step just taken."""
        return StepEvent(
            self.n_calls,
            self.config.agent.step_limit,
            command,
            rc,
            self.prompt_tokens,
            self.completion_tokens,
            self.elapsed(),
            format_error,
        )

    def seconds_left(self) -> float | None:
        """Seconds left of the wall-time budget; None when there is none."""
        limit = self.config.agent.wall_time_limit_seconds
        return limit - self.elapsed() if limit > 0 else None

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return self.clock() - self.started

    def stats(self) -> RunStats:
        """Counters for the trajectory."""
        return RunStats(self.n_calls, self.cost, self.prompt_tokens, self.completion_tokens, self.elapsed())

    def save(self) -> None:
        """Write the trajectory, if there is a writer."""
        if self.trajectory is not None:
            self.trajectory.save(self.messages, config=self.serialized_config(), stats=self.stats())

    def serialized_config(self) -> dict[str, Any]:
        """`info.config` in mini-swe-agent's layout."""
        return {
            "agent": self.config.agent.model_dump(mode="json"),
            "agent_type": f"{type(self).__module__}.{type(self).__name__}",
            "model": self.config.model.model_dump(mode="json"),
            "model_type": f"{type(self.model).__module__}.{type(self.model).__name__}",
            "environment": self.config.environment.model_dump(mode="json"),
            "environment_type": f"{type(self.sandbox).__module__}.{type(self.sandbox).__name__}",
        }

    def result(self) -> AgentResult:
        """The run's outcome, from the exit message."""
        last = self.messages[-1]
        extra = last.get("extra", {})
        status, content = extra.get("exit_status", ""), str(last.get("content") or "")
        return AgentResult(
            status,
            extra.get("submission", ""),
            self.n_calls,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost,
            self.elapsed(),
            self.messages,
            "" if extra.get("submission") or content == status else content,
        )
