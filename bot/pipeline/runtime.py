"""The runtime every driver shares: litellm with the deployment's key, Docker sandboxes, the agent config file.

The App's worker, `mini-fix run` and `mini-fix eval` compose it here; each passes only what is its own (the
worker's deployment and job labels, eval's `mini-fix.eval` label, the command line's `-c`). docker and litellm are
imported inside the factories, so the API-only server never loads them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bot import metrics
from bot.agent.config import MiniFixAgentConfig, ModelConfig
from bot.agent.model_base import Model
from bot.pipeline import runconfig
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig

SandboxFactory = Callable[[SandboxConfig, str], Sandbox]


@dataclass(frozen=True)
class Runtime:
    """The real collaborators of a run, built from the deployment's settings."""

    settings: Settings

    def model(self, config: ModelConfig) -> Model:
        """litellm for `config`, with MINIFIX_MODEL_API_KEY."""
        from bot.agent.model import LitellmModel

        key = self.settings.model_api_key
        return LitellmModel(config, api_key=key.get_secret_value() if key else None)

    def sandboxes(self, labels: Mapping[str, str] | None = None) -> SandboxFactory:
        """Docker sandboxes carrying `labels`, their actions timed into the exec metric; a start that meets the
        engine away (`sandbox/engine_retry.py`) is tried again within a bound."""
        given = dict(labels or {})

        def start(config: SandboxConfig, run_id: str) -> Sandbox:
            from sandbox.docker import DockerSandbox
            from sandbox.engine_retry import with_engine_retry

            observe = metrics.SANDBOX_EXEC_SECONDS.observe
            # a Docker engine away for a while (restarted: ~30 s) is waited out, within a bound, not a failed job
            return with_engine_retry(
                lambda: DockerSandbox.start(config, run_id, labels=given, on_exec=observe), what="starting a sandbox"
            )

        return start

    def agent_file(self, specs: Sequence[str] = ()) -> MiniFixAgentConfig:
        """The agent config file for this deployment and `-c`'s specs (which wins: `runconfig.agent_file`)."""
        return runconfig.agent_file(self.settings, specs)


def print_ignored(config: MiniFixAgentConfig) -> None:
    """The keys the config loader ignored, one warning line each on stderr (for the command-line drivers)."""
    for warning in config.warnings:
        print(f"warning: config key ignored: {warning}", file=sys.stderr)
