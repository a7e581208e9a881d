"""A scripted Model for eval tests: each task gets its own script, picked by a marker in the task text."""

from __future__ import annotations

from typing import Any

from bot.agent.model_base import ModelReply

SUBMIT = "printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n'"


class TaskRouter:
    """Answers turn N of the task whose marker appears in the first user message with that script's reply N."""

    name = "scripted"

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts
        self.calls: dict[str, int] = dict.fromkeys(scripts, 0)

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """The next reply of this task's script (turns counted as the agent's history shows them)."""
        task = str(messages[1]["content"])
        marker = next(m for m in self.scripts if m in task)
        turn = sum(1 for m in messages if m["role"] == "assistant" or m.get("extra", {}).get("interrupt_type"))
        self.calls[marker] += 1
        return ModelReply(self.scripts[marker][turn], 100, 10, 0.0, finish_reason="stop")
