"""The worker process's composition root: each collaborator built once (one GitHubApp, one ledger, one queue).

The real collaborators of a job are the App and the shared runtime (`pipeline/runtime.py`: the Docker sandbox and
litellm, imported inside its factories, so the API-only server never loads them); the worker adds its labels.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import structlog

from bot.agent.config import ModelConfig
from bot.agent.model_base import Model
from bot.github.gateway import GitHubGateway
from bot.gitlab.routing import by_forge, gitlab_factory
from bot.jobs import Job, JobOutcome, JobStatus
from bot.ledger import open_ledger
from bot.ledger.contract import Ledger
from bot.pipeline.attempts.setup_cache import SetupOptions
from bot.pipeline.capacity import SandboxSlots
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.publish.outbound import redacting
from bot.pipeline.run import run_pipeline
from bot.pipeline.runconfig import sandbox_limit
from bot.pipeline.runtime import Runtime
from bot.render import forge_words
from bot.settings import Settings
from bot.trajectory_store import shared_saver
from bot.worker import quotas, usage
from bot.worker.images import SandboxImages
from bot.worker.labels import LabelKeeper
from bot.worker.ledger_hooks import job_hooks
from bot.worker.notices import gave_up_notifier
from bot.worker.pool import Worker, build_worker
from bot.worker.retries import RetryAdmission
from bot.worker.review_checks import ReviewChecker

if TYPE_CHECKING:
    from bot.github.app import GitHubApp

WRITES_DRAIN_SECONDS = 30.0  # at shutdown: GitHub writes still queued (a second apart) get this long to go out
log = structlog.get_logger(__name__)


def wire_worker(settings: Settings) -> Worker:
    """The process's worker: one GitHubApp (where GitHub is served), one ledger and one queue shared by the runner,
    notices and chores; SettingsError when a forge is half-configured or none is."""
    served = settings.forges()
    app = _github_app(settings) if "github" in served else None
    gitlab = gitlab_factory(settings) if "gitlab" in served else None
    # A GitLab job (negative installation id) to GitLab; a forge this worker does not serve fails the job, clearly.
    forges = by_forge(app.for_repo if app is not None else None, gitlab)
    github = redacting(forges, settings.secrets)  # every write this process makes is redacted
    ledger = open_ledger(settings)  # shared with the runner: `/agent stop` jobs cancel runs through it
    runner = build_runner(
        settings,
        github,
        ledger=ledger,
        run_started=lambda job: _mark_ran(ledger, job),
    )
    runner = quotas.guarded(
        runner,
        settings,
        partial(used_tokens, ledger),
        github,
        followups=partial(followups_started, ledger),
        asked=quotas.config_quotas(github),
    )
    worker = build_worker(settings, runner, on_gave_up=gave_up_notifier(github), ledger=ledger)
    if app is not None:
        worker.after_stop.append(partial(app.drain, WRITES_DRAIN_SECONDS))  # queued reactions and comments go out
    worker.control.admit = RetryAdmission(ledger, github, worker.queue.enqueue).once
    worker.housekeeping = partial(sweep_sandboxes, settings.deployment_name, ledger)
    worker.warm_ups.append(import_job_modules)
    images = SandboxImages(settings)  # before the first job: pulled or built on this worker's engine if missing
    worker.warm_ups.append(partial(images.ensure_until_ready, worker.stopping))
    worker.checks["docker_engine"] = images.check_engine
    worker.checks["sandbox_image"] = images.check
    worker.before_job.append(images.ensure_present)  # removed while the App runs: made again, not a failed job
    if settings.create_labels:
        worker.chores.append(LabelKeeper(settings, ledger, github).run)
    worker.chores.append(ReviewChecker(ledger, github).run)  # a PR review's verdict counts once its author may write
    return worker


def _github_app(settings: Settings) -> GitHubApp:
    from bot.github.app import GitHubApp

    return GitHubApp(settings)


def build_runner(
    settings: Settings,
    github: Callable[[int, str], GitHubGateway],
    *,
    ledger: Ledger | None = None,
    run_started: Callable[[Job], None] | None = None,
) -> Callable[[Job, threading.Event], JobOutcome]:
    """The real pipeline: the given App and the shared runtime (Docker sandboxes, litellm, imported only there);
    `ledger` gives each job its hooks (`/agent stop`, labels, asks), bound to the job's forge."""
    runtime = Runtime(settings)
    agent_config = runtime.agent_file()
    save_trajectory = shared_saver(settings)  # one database connection per worker process
    slots = SandboxSlots(sandbox_limit(settings))  # shared by every job this process runs
    setup = SetupOptions.from_settings(settings)  # one setup cache per process, shared by its jobs

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        from sandbox.engine import DEPLOYMENT_LABEL, JOB_ID_LABEL  # the docker SDK: at a job, never at startup

        if job.attempts > 1:
            remove_stale_containers(job, settings.deployment_name)
        sandboxes = runtime.sandboxes({JOB_ID_LABEL: job.id, DEPLOYMENT_LABEL: settings.deployment_name})
        model: Callable[[ModelConfig], Model] = runtime.model
        if (meter := usage.active()) is not None:  # the worker's meter of this claim (bot/worker/usage.py)
            sandboxes, model = meter.sandboxes(sandboxes), meter.models(model)
        hooks = job_hooks(ledger, job.installation_id)
        deps = PipelineDeps(
            quotas.within_quota(settings),  # a token quota's headroom is this run's token budget
            github,
            sandboxes,
            model,
            agent_config,
            stop_runs=hooks.stop_runs,
            remember_label=hooks.remember_label,
            save_trajectory=save_trajectory,
            sandbox_slots=slots,
            issue_jobs=hooks.issue_jobs,
            asks=hooks.asks,
            setup=setup,
            run_started=run_started,
        )
        with forge_words(job.installation_id):  # a GitLab job's texts say "merge request" and `!iid`
            return run_pipeline(job, cancel, deps)

    return runner


def _mark_ran(ledger: Ledger, job: Job) -> None:
    """`Ledger.mark_ran` for the worker holding `job`."""
    if job.worker_id is not None and not ledger.mark_ran(job.id, job.worker_id):
        log.warning("run_not_marked", job_id=job.id, detail="the job is no longer held by this worker")


def remove_stale_containers(job: Job, deployment: str) -> None:
    """A dead worker's container for this job would hold its memory until the deadline: remove it now."""
    from sandbox.base import SandboxError
    from sandbox.cleanup import remove_labelled
    from sandbox.engine import JOB_ID_LABEL

    try:
        removed = remove_labelled(JOB_ID_LABEL, job.id, deployment=deployment)
    except SandboxError as exc:
        log.warning("stale_container_cleanup_failed", job_id=job.id, error=str(exc))
        return
    if removed:
        log.info("stale_containers_removed", job_id=job.id, count=removed)


def import_job_modules() -> None:
    """Import what a job needs but the worker's start does not (litellm: seconds; the docker SDK), before any job."""
    import sandbox.docker  # noqa: F401
    from bot.agent.model import import_litellm

    import_litellm()


def sweep_sandboxes(deployment: str, ledger: Ledger) -> None:
    """Remove this deployment's sandboxes whose job is not running in the ledger (left by crashed workers)."""
    from sandbox.docker import sweep

    if removed := sweep(deployment=deployment, running=partial(job_running, ledger)):
        log.info("stale_sandboxes_removed", count=removed, deployment=deployment)


def job_running(ledger: Ledger, job_id: str) -> bool:
    """Whether the ledger has `job_id` running; True when it cannot say (a sandbox is never removed on a guess)."""
    try:
        job = ledger.get(job_id)
    except Exception:
        log.warning("sweep_ledger_read_failed", job_id=job_id, exc_info=True)
        return True
    return job is not None and job.status == JobStatus.RUNNING


def used_tokens(ledger: Ledger, installation_id: int, since: str) -> tuple[int, float, float]:
    """Model tokens, cost and model seconds the installation's runs used from the UTC day `since` on (the ledger's
    usage rows)."""
    rows = ledger.usage_totals([], since=since, installation_id=installation_id)
    return (
        sum(int(r["prompt_tokens"]) + int(r["completion_tokens"]) for r in rows),
        sum(float(r["cost"]) for r in rows),
        sum(float(r["model_seconds"]) for r in rows),
    )


def followups_started(ledger: Ledger, job: Job, since: float | None) -> int:
    """CI and review follow-ups of the job's installation started since `since` (None: on the job's issue, ever)."""
    if since is None:
        return ledger.followups_started(job.installation_id, job.id, 0.0, (job.repo, job.issue))
    return ledger.followups_started(job.installation_id, job.id, since)
