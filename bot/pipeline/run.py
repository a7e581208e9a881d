"""One job, end to end (design.md steps 0-10): permission, status, clone, sandbox, agent, diff, push, PR."""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import structlog

from bot.agent.config import MiniFixAgentConfig, ModelConfig
from bot.agent.loop import StepEvent
from bot.agent.model_base import Model
from bot.github.gateway import GitHubError, GitHubGateway, Issue, can_write
from bot.jobs import SHUTDOWN_REASON, Job, JobKind, JobOutcome, JobStatus, Outcome, RunInfo, cancel_reason
from bot.pipeline import execute, gitops
from bot.pipeline.admit import (
    RememberLabel,
    admit,
    agent_config_for,
    guidance,
    reader,
    sandbox_config_for,
    setup_networked,
)
from bot.pipeline.ceilings import clamp
from bot.pipeline.change import Change
from bot.pipeline.control import StopRuns, run_control
from bot.pipeline.execute import RunFailed
from bot.pipeline.feedback import review_feedback
from bot.pipeline.outbound import RedactingGateway
from bot.pipeline.publish import attach_trajectory, open_or_update_pr, pr_body_vars, push_change
from bot.pipeline.report import report, run_link
from bot.pipeline.state import RunState
from bot.pipeline.status import StatusComment
from bot.pipeline.task import build_task, clean
from bot.render import render
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from bot.trajectory import TrajectoryWriter, annotate_trajectory, redact
from sandbox.base import Sandbox, SandboxConfig

log = structlog.get_logger(__name__)


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


def run_pipeline(job: Job, cancel: threading.Event, deps: PipelineDeps) -> JobOutcome:
    """Run one job; every ending leaves something a maintainer can see on GitHub."""
    run_id = job.run_id or uuid.uuid4().hex[:12]
    with structlog.contextvars.bound_contextvars(job_id=job.id, repo=job.repo, issue=job.issue, run_id=run_id):
        gh: GitHubGateway = RedactingGateway(deps.github(job.installation_id, job.repo), deps.settings.secrets)
        try:
            number = execute.issue_number(gh, job)
            if job.kind.is_control:
                return _control(job, gh, number, deps)
            role = gh.permission(job.requester)
            if not can_write(role):
                gh.create_comment(number, render("denied_comment.md", requester=job.requester, role=role))
                log.info("job_denied", role=role)
                return JobOutcome(JobStatus.DENIED, run_id=run_id, error=f"requester role is {role}")
            read = reader(deps.github, job.installation_id, gh, job.repo)
            admitted = admit(job, gh, number, deps.settings, read, deps.remember_label)
            if isinstance(admitted, JobOutcome):
                return replace(admitted, run_id=run_id)
            admitted, notes = clamp(admitted, deps.settings)
            agent = agent_config_for(deps.agent_config, deps.settings, admitted)
            return _run(job, cancel, deps, gh, number, run_id, admitted, agent, notes)
        except (GitHubError, RunFailed) as exc:  # before a status comment exists: nowhere useful to write
            log.warning("job_failed_early", error=str(exc))
            return JobOutcome(JobStatus.FAILED, run_id=run_id, error=str(exc))


def _control(job: Job, gh: GitHubGateway, number: int, deps: PipelineDeps) -> JobOutcome:
    if deps.stop_runs is None:
        raise RunFailed(Outcome.AGENT_CRASHED, "this worker was built without a ledger to stop runs with")
    return run_control(job, gh, number, deps.stop_runs, deps.settings.label)


def _run(
    job: Job,
    cancel: threading.Event,
    deps: PipelineDeps,
    gh: GitHubGateway,
    number: int,
    run_id: str,
    config: RepoConfig,
    agent: MiniFixAgentConfig,
    notes: list[str],
) -> JobOutcome:
    gh.add_reaction(number, "eyes")
    if job.comment_id:
        gh.add_reaction(number, "eyes", comment_id=job.comment_id)
    model_config = resolve_model_config(agent, deps.settings)
    run: RunInfo = {
        "run_id": run_id,
        "model": model_config.model_name,
        "requester": job.requester,
        "retry": job.kind == JobKind.RETRY,
        "exit_status": "",
        "clamped": notes,
    }
    status = StatusComment(gh, number, run, deps.clock)
    state = RunState(job, gh, number, run, status, agent, model_config, cancel, config=config)
    state.status.start()
    try:
        _attempt(state, deps)
        key, detail = (Outcome.PR_OPENED if state.published and state.published.created else Outcome.PR_UPDATED), ""
    except RunFailed as exc:
        key, detail = exc.outcome, exc.detail
    except GitHubError as exc:
        key, detail = Outcome.GITHUB_FAILED, str(exc)
    if key == Outcome.CANCELLED and cancel_reason(cancel) == SHUTDOWN_REASON:
        key = Outcome.REQUEUED  # not the maintainers' doing: the job runs again on another worker
    elif key == Outcome.CANCELLED:
        state.run["stop_reason"] = detail = cancel_reason(cancel) or detail
    return report(state, key, detail, deps.settings)


def _attempt(state: RunState, deps: PipelineDeps) -> None:
    gh, run_id, cancel = state.gh, state.run["run_id"], state.cancel
    issue = gh.get_issue(state.number)
    issue = Issue(issue.number, clean(issue.title), issue.body, issue.author, issue.state)
    repo = gh.get_repo()
    early = execute.EarlySandbox(deps.sandbox, sandbox_config_for(state.agent, deps.settings, state.config), run_id)
    with early_discarded(early), tempfile.TemporaryDirectory(prefix=f"mini-fix-{run_id}-", dir=deps.workdir) as tmp:
        checkout = Path(tmp) / "repo"
        token = gh.git_token()
        execute.clone(repo, token, checkout, max_bytes=deps.settings.max_clone_bytes)
        _check_cancel(cancel)
        comments = gh.list_comments(state.number)
        if state.job.kind == JobKind.RETRY:  # what reviewers said on the PR since the last run
            comments += review_feedback(gh, state.number, comments, state.status.comment_id)
        task = build_task(
            issue,
            comments,
            guidance=state.job.guidance,
            can_write=lambda user: can_write(gh.permission(user)),
        )
        if extra := guidance(state.config, checkout):
            task = f"{task}\n\n{extra}"
        sandbox = early.take(checkout)
        change = _sandboxed(state, deps, task, sandbox, secrets=[token], checkout=checkout)
        diff = change.diff
        if not diff.strip():
            raise RunFailed(Outcome.EMPTY_DIFF)
        refuse_unsafe(state, change, [token, *deps.settings.secrets])
        _check_cancel(cancel)
        push_change(gh, checkout, diff, issue=issue, run=state.run, token=token)
    link = run_link(deps.settings, run_id)
    assert state.result is not None
    body_vars = {**pr_body_vars(issue, state.run, state.result, diff, link), "test": state.test}
    state.published = open_or_update_pr(gh, issue=issue, base=repo.default_branch, body_vars=body_vars)
    messages = redact(state.result.messages, [token, *deps.settings.secrets])
    attach_trajectory(
        gh, state.published.pr, messages, run=state.run, exit_status=state.result.exit_status, run_link=link
    )


def refuse_unsafe(state: RunState, change: Change, secrets: list[str]) -> None:
    """End the run when the change touches protected paths, adds links the config does not allow, or holds a
    secret the worker knows (a key read through some other hole must not be pushed)."""
    state.paths = gitops.protected(change.paths, state.config.protected_paths)
    if not state.config.allow_links:
        state.paths += change.links
    if any(secret in change.diff for secret in secrets if secret):
        state.paths.append("(a changed file holds one of the worker's secrets)")
    if state.paths:
        raise RunFailed(Outcome.PROTECTED_PATHS, ", ".join(state.paths))


def _sandboxed(
    state: RunState, deps: PipelineDeps, task: str, sandbox: Sandbox, secrets: list[str], checkout: Path
) -> Change:
    """Run the agent in the sandbox and take its change out; the container is removed whatever happens."""
    run_id, cancel = state.run["run_id"], state.cancel
    writer = TrajectoryWriter(
        deps.settings.data_dir / "runs" / run_id / "trajectory.json",
        secrets=[*secrets, *deps.settings.secrets],
        mini_fix={
            "repo": state.job.repo,
            "issue": state.number,
            "run_id": run_id,
            "job_id": state.job.id,
            "training": state.config.training,
            "model": state.model.model_name,
        },
        mirror=partial(deps.save_trajectory, run_id) if deps.save_trajectory else None,
    )
    try:
        with execute.closed_on_cancel(sandbox, cancel):
            networked = setup_networked(state.config, deps.settings)
            excludes = execute.run_setup(sandbox, state.config.setup, networked=networked)
            state.result = execute.run_agent(
                deps.model(state.model),
                sandbox,
                state.agent,
                task,
                trajectory=writer,
                on_step=partial(_on_step, state.status),
                cancel=cancel,
                checkout=checkout,
            )
            state.run["exit_status"] = state.result.exit_status
            execute.require_submission(state.result)
            change = execute.take_change(
                sandbox,
                checkout,
                checkout.parent / "export",
                max_bytes=deps.settings.max_export_bytes,
                exclude=excludes,
            )
            if state.config.test:
                state.test = execute.run_test(sandbox, state.config.test)
                annotate_trajectory(writer.path, "test", redact(state.test, writer.secrets))
            return change
    finally:
        sandbox.close()


@contextmanager
def early_discarded(early: execute.EarlySandbox) -> Iterator[None]:
    """Whatever ends the attempt, a container started early and never used is removed."""
    try:
        yield
    finally:
        early.discard()


def _on_step(status: StatusComment, event: StepEvent) -> None:
    status.progress(
        step=event.step,
        limit=event.step_limit,
        command=event.command,
        tokens=event.prompt_tokens + event.completion_tokens,
        elapsed=event.elapsed_seconds,
    )


def _check_cancel(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise RunFailed(Outcome.CANCELLED)


def resolve_model_config(config: MiniFixAgentConfig, settings: Settings) -> ModelConfig:
    """The config's model section, with the deployment's model and API base where it names none."""
    return config.model.model_copy(
        update={
            "model_name": config.model.model_name or settings.model,
            "api_base": config.model.api_base or settings.model_api_base,
        }
    )
