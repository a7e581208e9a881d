"""The App's own check of every attempt, in fresh sandboxes the agent never touched.

For each acceptable candidate: its reproduction test (its new or changed test files) must fail on the base commit
and pass with its whole change; the repository's `test` command runs on its change; and every other attempt's valid
reproduction runs on its tree (cross-validation). Verdicts are the engine's exit codes, never the sandbox's output.
"""

from __future__ import annotations

import threading
from pathlib import Path

from bot.pipeline.candidates import Candidate
from bot.pipeline.testbed import SandboxFactory
from bot.repo_config.schema import RepoConfig
from sandbox.base import SandboxConfig


def verify(
    candidates: list[Candidate],
    *,
    checkout: Path,
    factory: SandboxFactory,
    sandbox_config: SandboxConfig,
    repo: RepoConfig,
    run_id: str,
    workdir: Path,
    cancel: threading.Event,
) -> None:
    """Fill each acceptable candidate's `test`, `reproduction` and `cross`, in fresh sandboxes (never raises)."""
    # Interface stub: the real checks land in the next commits on branch best-core.
    for candidate in candidates:
        if candidate.acceptable:
            candidate.reproduction = None
