"""One job, end to end (design.md steps 0-10): permission, status, clone, sandbox, agent, diff, push, PR."""

from __future__ import annotations

import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from bot.github.gateway import GitHubError, GitHubGateway, Issue, RateLimited, RepoInfo, can_write
from bot.jobs import SHUTDOWN_REASON, Job, JobOutcome, JobStatus, Outcome, RunInfo, cancel_reason
from bot.pipeline import jobplan
from bot.pipeline.admit.control import run_control
from bot.pipeline.admit.deferral import rate_limited
from bot.pipeline.admit.gate import admit, guidance, reader
from bot.pipeline.attempts import engine, execute
from bot.pipeline.attempts.plan import Attempt, AttemptPlan
from bot.pipeline.attempts.setup_cache import RepoSetup, SetupOptions, cache_owner
from bot.pipeline.capacity import Removals
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.errors import RunFailed
from bot.pipeline.git import gitops
from bot.pipeline.judge.judgement import Checks, Judgement, judge
from bot.pipeline.judge.ranking import dropped_text
from bot.pipeline.publish import branch
from bot.pipeline.publish.events import Said, note
from bot.pipeline.publish.outbound import RedactingGateway
from bot.pipeline.publish.pr import (
    WIP_PREFIX,
    attach_trajectory,
    duplicate_pr,
    open_or_update_pr,
    pr_body_vars,
    push_change,
    push_notes,
    wip_note,
)
from bot.pipeline.publish.prtext import attempts_table, dropped_notes, evidence
from bot.pipeline.publish.status import StatusComment
from bot.pipeline.publish.tokens import FreshToken
from bot.pipeline.publish.whole import WholeDiff, whole_diff
from bot.pipeline.report import report, run_link
from bot.pipeline.runconfig import RunConfig, Settled, resolve, settle
from bot.pipeline.state import Given, Judged, RunState
from bot.pipeline.task import asks
from bot.pipeline.task.issue import clean
from bot.pipeline.task.kinds import Kind, kind_of
from bot.render import outcome, render
from bot.repo_config import devcontainer
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from bot.trajectory import redact

log = structlog.get_logger(__name__)


def run_pipeline(job: Job, cancel: threading.Event, deps: PipelineDeps) -> JobOutcome:
    """Run one job; every ending leaves something a maintainer can see on GitHub."""
    run_id = job.run_id or uuid.uuid4().hex[:12]
    with structlog.contextvars.bound_contextvars(job_id=job.id, repo=job.repo, issue=job.issue, run_id=run_id):
        gh: GitHubGateway = RedactingGateway(deps.github(job.installation_id, job.repo), deps.settings.secrets)
        try:
            number = execute.issue_number(gh, job)
            kind = kind_of(job)  # chosen once: below, the kind object answers what differs between kinds
            if kind.control:
                return run_control(job, gh, number, deps.stop_runs, deps.settings.label)
            ready = _ready(job, kind, gh, number, deps)
            if isinstance(ready, JobOutcome):
                return _ended_early(job, kind, gh, number, replace(ready, run_id=run_id), deps)
            return _run(ready[0], kind, cancel, deps, gh, number, run_id, ready[1])
        except RateLimited as exc:  # before a status comment exists: run again once GitHub allows
            return rate_limited(job, gh, exc, run_id, deps.settings)
        except (GitHubError, RunFailed) as exc:  # before a status comment exists: nowhere useful to write
            log.warning("job_failed_early", error=str(exc))
            return JobOutcome(JobStatus.FAILED, run_id=run_id, error=str(exc))


def _ready(
    job: Job, kind: Kind, gh: GitHubGateway, number: int, deps: PipelineDeps
) -> tuple[Job, RunConfig] | JobOutcome:
    """The job with what its run carries, and its configuration; or how it ends before a run."""
    located = kind.locate(job, gh)  # a GitLab branch pipeline's CI follow-up: its merge request, found now
    if isinstance(located, JobOutcome):
        return located
    job = located
    if (ended := kind.gate(job, gh)) is not None:
        return ended
    role = kind.requester_role(job, gh)
    if not can_write(role):
        gh.create_comment(number, render("denied_comment.md", requester=job.requester, role=role))
        log.info("job_denied", role=role)
        return JobOutcome(JobStatus.DENIED, error=f"requester role is {role}")
    read = reader(deps.github, job.installation_id, gh, job.repo)
    admitted = admit(job, gh, number, deps.settings, read, deps.remember_label)
    if isinstance(admitted, JobOutcome):
        return admitted
    found = None
    if deps.settings.devcontainer_images:  # off by default: no extra reads of the repository
        found, _ = devcontainer.read(read, job.repo)
    resolved = resolve(deps.settings, deps.agent_config, admitted, devcontainer=found)
    carried = asks.fold(job, gh, deps.asks)  # what waited for this run, each checked before any effect
    prepared = kind.prepare(job, gh, resolved.repo, deps.settings, deps.issue_jobs, carried)
    # a follow-up carries what failed, or the review, into its task
    return prepared if isinstance(prepared, JobOutcome) else (prepared, resolved)


def _ended_early(
    job: Job, kind: Kind, gh: GitHubGateway, number: int, ended: JobOutcome, deps: PipelineDeps
) -> JobOutcome:
    """A job that ends before its run; a resumed one (its worker died mid-run, e.g. right after its push) also
    closes the status comment that run left saying it was working."""
    if job.attempts > 1 and ended.status != JobStatus.QUEUED:
        run: RunInfo = {
            "run_id": ended.run_id or "",
            "model": "",
            "requester": job.requester,
            "retry": kind.retry,
            "exit_status": "",
            "stop_reason": f"its worker stopped mid-run; on resuming: {ended.error or ended.status}",
        }
        StatusComment(gh, number, run, deps.clock, job_id=job.id).close_earlier(outcome(Outcome.CANCELLED, run=run))
    return ended


def _run(
    job: Job,
    kind: Kind,
    cancel: threading.Event,
    deps: PipelineDeps,
    gh: GitHubGateway,
    number: int,
    run_id: str,
    resolved: RunConfig,
) -> JobOutcome:
    run: RunInfo = {
        "run_id": run_id,
        "model": resolved.model.model_name,
        "profile": resolved.profile,
        "requester": job.requester,
        "retry": kind.retry,
        "exit_status": "",
        "clamped": list(resolved.notes),
        "followup": kind.run_note(job),  # what started a follow-up ("" for a plain run: not shown)
    }
    count = resolved.attempts
    status = StatusComment(gh, number, run, deps.clock, attempts=count, job_id=job.id)
    status.token_budget = deps.settings.max_tokens if count > 1 else 0
    state = RunState(run_id, status, config=resolved.repo, count=count)
    given = Given(job, gh, number, run_id, cancel, kind)  # what the steps read; `state` gathers what they learn
    state.status.start()
    # after the status comment: the reactions are content too, and go a second later while the run clones
    gh.add_reaction(number, "eyes")
    if job.comment_id:
        gh.add_reaction(number, "eyes", comment_id=job.comment_id)
    try:
        _work(state, given, deps, resolved)
        key, detail = (Outcome.PR_OPENED if state.published and state.published.created else Outcome.PR_UPDATED), ""
    except RunFailed as exc:
        key, detail = exc.outcome, exc.detail
    except RateLimited as exc:  # GitHub's limit outlasted the retries mid-run: paused, the job runs again later
        if job.attempts < deps.settings.max_claims:
            paused = report(state, Outcome.REQUEUED, "", deps.settings)
            log.warning("job_deferred", error=str(exc), retry_in_s=exc.retry_after, attempt=job.attempts)
            return replace(paused, error=f"{Outcome.GITHUB_RATE_LIMITED}: {exc}", retry_in=exc.retry_after)
        key, detail = Outcome.GITHUB_RATE_LIMITED, str(exc)
    except GitHubError as exc:
        key, detail = Outcome.GITHUB_FAILED, str(exc)
    if key == Outcome.CANCELLED and cancel_reason(cancel) == SHUTDOWN_REASON:
        key = Outcome.REQUEUED  # not the maintainers' doing: the job runs again on another worker
    elif key == Outcome.CANCELLED:
        detail = cancel_reason(cancel) or detail
        state.status.say(Said("stop_reason", detail))
    return report(state, key, detail, deps.settings)


def _work(state: RunState, given: Given, deps: PipelineDeps, resolved: RunConfig) -> None:
    """Clone, run the job's attempts in parallel, judge them with the App's own tests, publish the chosen one.
    The steps read what the run was given from `given`; `state` takes what the run learns, for the report."""
    gh, run_id, cancel = given.gh, given.run_id, given.cancel
    status = state.status
    issue = gh.get_issue(given.number)
    issue = Issue(issue.number, clean(issue.title), issue.body, issue.author, issue.state)
    repo = gh.get_repo()
    setup = _repo_setup(status, given.job.repo, deps, repo)
    deps = replace(deps, sandbox=setup.bind(deps.sandbox))  # attempts' and verify's sandboxes
    removals = Removals()  # containers go in the background; all gone before the PR
    plan = jobplan.plan_for(given, status, deps, resolved, removals)
    with (
        _all_removed(removals),
        engine.started(plan) as started,
        tempfile.TemporaryDirectory(prefix=f"mini-fix-{run_id}-", dir=deps.workdir) as name,
    ):
        tmp = Path(name)
        checkout = tmp / "repo"
        token = FreshToken(gh.git_credential)  # minted again near its expiry: a long run's push still works
        start = _start(given.job, given.number, repo, checkout, token, deps.settings.max_clone_bytes)
        if not start.on_pr:  # the default branch's head: its setup's result may be cached (setup_cache.trusts)
            setup.trust(checkout, gitops.head(checkout))
        _not_duplicate(gh, status, issue, repo, start)  # before the agent: no run spent on a change nobody publishes
        _check_cancel(cancel)
        found = settle(resolved, checkout, deps.settings)
        settled, config = _settle(status, plan, found), found.config.repo
        state.config = config
        task = _task(given, issue, status, config, checkout, token, start)
        secrets = [*token.minted, *deps.settings.secrets]
        if given.kind.counted and deps.run_started is not None:
            deps.run_started(given.job)  # from here on it counts toward `ci_followups` (followup.ci_done), once
        runs = started.run(task, checkout, tmp, secrets, settled)
        _check_cancel(cancel)
        judgement = judge(runs, Checks.of(settled, checkout, tmp), secrets=secrets, mirror=deps.save_trajectory)
        state.judged = Judged(tuple(judgement.candidates))  # a stopped job's statistics still count its attempts
        _check_cancel(cancel)  # a stopped job's ending comes before anything else is taken from the judgement
        state.judged = judged = _judged(judgement, state.count, deps.settings)
        status.say(Said("exit_status", judgement.exit_status))
        chosen = judgement.publishable()
        assert chosen.candidate.change is not None and chosen.result is not None
        diff = chosen.candidate.change.diff
        _check_cancel(cancel)
        pushed = _push(given, status, judged.wip, issue, repo, checkout, diff, token, start)
        whole = _whole_diff(config, status, cancel, checkout, token, start, pushed)
    link, run = run_link(deps.settings, chosen.candidate.run_id), status.info()  # the run as the PR tells it
    body_vars = _body_vars(issue, run, chosen, judged, link, whole) | {"default_branch": start.default_branch}
    # A branch moved by someone during the run: the new commit is proposed as a PR into it, never forced over it.
    base = start.branch if pushed.diverted else repo.default_branch
    title = f"{WIP_PREFIX}{issue.title}" if judged.wip else issue.title
    published = open_or_update_pr(gh, issue=issue, base=base, body_vars=body_vars, head=pushed.branch, title=title)
    state.published = published
    messages = redact(chosen.result.messages, secrets)
    attach_trajectory(gh, published.pr, messages, run=run, exit_status=chosen.result.exit_status, run_link=link)
    given.kind.answer(given.job, gh, run_id)


def _task(
    given: Given,
    issue: Issue,
    status: StatusComment,
    config: RepoConfig,
    checkout: Path,
    token: FreshToken,
    start: branch.Start,
) -> str:
    """The agent's task: the job kind's text, the repository's guidance, and what the run builds on (a PR branch's
    earlier commits)."""
    task = given.kind.task(given.job, given.gh, issue, status.comment_id)
    if extra := guidance(config, checkout):
        task = f"{task}\n\n{extra}"
    if earlier := branch.builds_on(checkout, token, start, depth=execute.CLONE_DEPTH):
        task = f"{task}\n\n{earlier}"
    return task


def _body_vars(
    issue: Issue, run: RunInfo, chosen: Attempt, judged: Judged, link: str | None, whole: WholeDiff | None
) -> dict[str, Any]:
    """The PR body's variables. Its warnings are about the whole PR: a run on the PR branch takes them from its
    whole diff."""
    assert chosen.candidate.change is not None and chosen.result is not None
    warned = replace(chosen.candidate, dropped=whole.dropped) if whole else chosen.candidate
    return {
        **pr_body_vars(issue, run, chosen.result, chosen.candidate.change.diff, link),
        "test": judged.test,
        "attempts_table": judged.table,
        "evidence": evidence(chosen.candidate),
        "dropped": dropped_text(warned),
        "dropped_notes": dropped_notes(warned),
        "protected": whole.protected if whole else [],
    }


@contextmanager
def _all_removed(removals: Removals) -> Iterator[None]:
    """Whatever ends the block, every container the job removes in the background is gone when it is left."""
    try:
        yield
    finally:
        removals.wait()


def _judged(judgement: Judgement, count: int, settings: Settings) -> Judged:
    """What the run learns from the judgement, for the report and the PR."""
    candidates = tuple(judgement.candidates)
    table = ""
    if count > 1:
        links = {run.candidate.index: run_link(settings, run.candidate.run_id) if run.trajectory else None
                 for run in judgement.attempts}  # fmt: skip
        table = attempts_table(judgement.choice, judgement.candidates, links)
    chosen = judgement.chosen
    if chosen is None:
        result = judgement.attempts[0].result if count == 1 else None
        return Judged(candidates, table, judgement.wip, result, judgement.refused)
    return Judged(
        candidates, table, judgement.wip, chosen.result, test=judgement.test, link_run_id=chosen.candidate.run_id
    )


def _repo_setup(status: StatusComment, full_name: str, deps: PipelineDeps, repo: RepoInfo) -> RepoSetup:
    """The job's repository setup (time limit, cache: `cache_owner`); what it did goes into the status comment and
    the PR."""

    def said(summary: str) -> None:
        status.say(Said("setup", summary))  # the status comment's next edit shows it

    options = deps.setup or SetupOptions.from_settings(deps.settings)
    return RepoSetup(cache_owner(full_name, repo.id), options, on_report=said)


def _push(
    given: Given,
    status: StatusComment,
    wip: str,
    issue: Issue,
    repo: RepoInfo,
    checkout: Path,
    diff: str,
    token: FreshToken,
    start: branch.Start,
) -> branch.Pushed:
    """Commit and push the chosen change, unless another open PR already fixes the issue (then say so)."""
    if wip:
        status.say(note(wip_note(wip)))
    _not_duplicate(given.gh, status, issue, repo, start)  # again: a writer may have opened one during the run
    if ended := given.kind.recheck(given.job, given.gh):  # never pushed to (or reopening) a closed or merged PR
        status.say(Said("stop_reason", ended))
        raise RunFailed(Outcome.PR_ENDED, ended)
    pushed = push_change(
        given.gh, checkout, diff, issue=issue, run_id=given.run_id, token=token, start=start, kind=given.job.kind
    )
    status.say(*map(note, push_notes(pushed, start, issue.number)))
    return pushed


def _whole_diff(
    config: RepoConfig,
    status: StatusComment,
    cancel: threading.Event,
    checkout: Path,
    token: FreshToken,
    start: branch.Start,
    pushed: branch.Pushed,
) -> WholeDiff | None:
    """For a run that built on the PR branch, the warnings of the PR's whole diff against the default branch (a
    fix's, or a diverted run's, own diff is its PR's whole diff: None)."""
    if not start.on_pr or pushed.diverted:
        return None
    try:
        tip = gitops.fetch(checkout, token, start.default_branch, depth=execute.CLONE_DEPTH)
        return whole_diff(
            checkout,
            tip,
            test_paths=list(config.test_paths),
            protected_globs=list(config.protected_paths),
            cancel=cancel,
        )
    except (gitops.GitError, OSError) as exc:
        log.warning("whole_diff_not_checked", error=str(exc))
        status.say(
            note(
                f"mini-fix could not compare the whole pull request with `{start.default_branch}`, so the warnings "
                "here are about this run's change only: check the earlier commits for dropped tests yourself."
            )
        )
        return None


def _not_duplicate(gh: GitHubGateway, status: StatusComment, issue: Issue, repo: RepoInfo, start: branch.Start) -> None:
    """End the job when another open PR, by a writer or from the repository itself, already fixes the issue."""
    if other := duplicate_pr(gh, number=issue.number, repo=repo.full_name, branch=start.branch):
        status.say(note(f"Already fixed by the open pull request {other.url}."))
        raise RunFailed(Outcome.DUPLICATE_PR, f"#{other.number} {other.url}")


def _start(job: Job, number: int, repo: RepoInfo, checkout: Path, token: FreshToken, max_bytes: int) -> branch.Start:
    """Where the job starts (branch.plan_start), cloned into `checkout`."""
    try:
        start = branch.plan_start(job, repo, number, token)
    except gitops.GitError as exc:
        raise RunFailed(Outcome.CLONE_FAILED, execute.git_failure(exc)) from exc
    execute.clone(repo, token, checkout, max_bytes=max_bytes, branch=start.source)
    return start


def _settle(status: StatusComment, plan: AttemptPlan, settled: Settled) -> AttemptPlan:
    """The plan once the clone settled the setup (the repository's, else inferred from the clone, with the proxy's
    network) and the test command (configured, else inferred): `runconfig.settle`; the status comment says which of
    each and why."""
    if settled.setup.commands:
        status.say(Said("setup_from", settled.setup.describe()))
    testing = settled.testing
    command = f"`{testing.command}`" if testing.command else "none"
    status.say(Said("tests", f"{command} ({testing.why})"))  # the status comment's next edit shows it
    return plan.settled(settled.config, settled.tested)


def _check_cancel(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise RunFailed(Outcome.CANCELLED)
