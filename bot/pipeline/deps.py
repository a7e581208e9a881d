"""What a job talks to (GitHub, sandboxes, the model, the ledger's hooks), passed in so tests can swap in fakes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.agent.config import MiniFixAgentConfig, ModelConfig
from bot.agent.model_base import Model
from bot.github.gateway import GitHubGateway
from bot.jobs import Job
from bot.pipeline.admit.control import StopRuns
from bot.pipeline.admit.gate import RememberLabel
from bot.pipeline.attempts.setup_cache import SetupOptions
from bot.pipeline.capacity import SandboxSlots
from bot.pipeline.task.asks import AskLedger
from bot.pipeline.task.followup import IssueJobs
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig


@dataclass
class PipelineDeps:
    """Everything a job talks to, passed in so tests can swap in fakes."""

    settings: Settings
    github: Callable[[int, str], GitHubGateway]  # (installation id, "owner/name") -> gateway
    sandbox: Callable[[SandboxConfig, str], Sandbox]  # (config, run id) -> a started sandbox
    model: Callable[[ModelConfig], Model]
    agent_config: MiniFixAgentConfig
    clock: Callable[[], float] = time.monotonic
    workdir: Path | None = None  # parent of the per-run checkout directories (None: the system temp dir)
    stop_runs: StopRuns | None = None  # Ledger.cancel, for `/agent stop` jobs
    remember_label: RememberLabel | None = None  # Ledger.remember_label: the webhook path learns renamed labels
    save_trajectory: Callable[[str, str], None] | None = None  # (run id, JSON): where every API replica reads it
    sandbox_slots: SandboxSlots | None = None  # the worker-wide bound on sandboxes, attempts' and verify's (None: none)
    setup: SetupOptions | None = None  # the setup time limit and cache, one per worker process (None: from settings)
    issue_jobs: IssueJobs | None = None  # Ledger.issue_jobs: how many CI follow-ups a PR already had (None: no bound)
    run_started: Callable[[Job], None] | None = None  # Ledger.mark_ran: a CI follow-up counts once its run started
    asks: AskLedger | None = None  # Ledger.waiting_asks/settle_ask: the asks a run carries (None: its own only)
