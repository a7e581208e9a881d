"""The real collaborators of a job, wired once per worker: the App, the Docker sandbox, litellm.

Imports of docker and litellm stay inside the factories, so the API-only server never loads them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from bot import metrics
from bot.agent.config import ModelConfig
from bot.agent.model_base import Model
from bot.jobs import Job, JobOutcome
from bot.pipeline.admit import RememberLabel
from bot.pipeline.control import StopRuns
from bot.pipeline.run import PipelineDeps, run_job
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig

log = structlog.get_logger(__name__)


def build_runner(
    settings: Settings, *, stop_runs: StopRuns | None = None, remember_label: RememberLabel | None = None
) -> Callable[[Job, threading.Event], JobOutcome]:
    """The real pipeline: the App, the Docker sandbox, litellm (imported here, never at startup)."""
    from bot.agent.config import load_config
    from bot.github.app import GitHubApp

    app = GitHubApp(settings)
    api_key = settings.model_api_key.get_secret_value() if settings.model_api_key else None

    def sandbox_for(job: Job) -> Callable[[SandboxConfig, str], Sandbox]:
        def start(config: SandboxConfig, run_id: str) -> Sandbox:
            from sandbox.docker import DockerSandbox
            from sandbox.engine import JOB_ID_LABEL

            return DockerSandbox.start(
                config, run_id, labels={JOB_ID_LABEL: job.id}, on_exec=metrics.SANDBOX_EXEC_SECONDS.observe
            )

        return start

    def model(config: ModelConfig) -> Model:
        from bot.agent.model import LitellmModel

        return LitellmModel(config, api_key=api_key)

    agent_config = load_config(settings.agent_config)

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        if job.attempts > 1:
            remove_stale_containers(job)
        deps = PipelineDeps(
            settings,
            app.for_repo,
            sandbox_for(job),
            model,
            agent_config,
            stop_runs=stop_runs,
            remember_label=remember_label,
        )
        return run_job(job, cancel, deps)

    return runner


def remove_stale_containers(job: Job) -> None:
    """A dead worker's container for this job would hold its memory until the deadline: remove it now."""
    from sandbox.base import SandboxError
    from sandbox.engine import JOB_ID_LABEL, remove_labelled

    try:
        removed = remove_labelled(JOB_ID_LABEL, job.id)
    except SandboxError as exc:
        log.warning("stale_container_cleanup_failed", job_id=job.id, error=str(exc))
        return
    if removed:
        log.info("stale_containers_removed", job_id=job.id, count=removed)
