"""The agent: loop, model, config and errors. Names are imported on first use, so this package stays cheap."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Agent": "bot.agent.loop",
    "AgentResult": "bot.agent.loop",
    "StepEvent": "bot.agent.loop",
    "LitellmModel": "bot.agent.model",
    "MiniFixAgentConfig": "bot.agent.config",
    "load_config": "bot.agent.config",
    "Model": "bot.agent.model_base",
    "ModelReply": "bot.agent.model_base",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
