"""`mini-fix run`'s driver: a checkout on this machine through the App's configuration, plan, engine and judge, the
result as files, no forge. The command line (`bot/cli/local_run.py`) fixes its flags into a `LocalRun` and prints
what each step returns; the steps run in the App's order (configuration, then what the checkout settles, then the
attempts in the flow shared with `mini-fix eval`, `onhost.attempted`)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.agent.config import missing_api_base
from bot.agent.loop import StepEvent
from bot.pipeline import runconfig
from bot.pipeline.attempts.execute import SANDBOX_FAILURES
from bot.pipeline.attempts.exits import SUBMITTED, exit_for
from bot.pipeline.attempts.plan import Attempt, AttemptPlan
from bot.pipeline.attempts.setup_cache import RepoSetup, SetupOptions
from bot.pipeline.git.gitops import GitError
from bot.pipeline.git.hostgit import git
from bot.pipeline.git.quarantine import quarantined
from bot.pipeline.judge.judgement import Judgement
from bot.pipeline.onhost import Planned
from bot.pipeline.publish.prtext import attempts_table
from bot.pipeline.runconfig import Flags, RunConfig, Settled
from bot.pipeline.runtime import Runtime, print_ignored
from bot.repo_config.load import ConfigError, load_repo_config
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings

SANDBOX_OUTCOMES = {outcome for _, outcome in SANDBOX_FAILURES}
API_BASE_HINT = "pass --api-base http://HOST:PORT/v1 (scripts/ensure-model.sh start prints one for a CPU model)"


@dataclass(frozen=True)
class LocalGiven:
    """What one `mini-fix run` is given, fixed before anything runs."""

    checkout: Path
    task: str
    flags: Flags
    output: Path
    run_id: str


@dataclass(frozen=True)
class Progress:
    """Where a local run's progress goes as it happens (the command line prints it)."""

    on_step: Callable[[int, StepEvent], None]
    on_end: Callable[[int, str], None]
    on_setup: Callable[[str], None]


@dataclass(frozen=True)
class Written:
    """What a finished run left in its output folder, said in lines, and the command's exit code."""

    code: int
    out: tuple[str, ...] = ()
    err: tuple[str, ...] = ()


class Refused(Exception):
    """The run can't start (exit 2); the message says why and what to do."""


def checked_head(repo: Path) -> str:
    """The checkout's HEAD commit, read through a quarantine (the checkout's own git config never runs); Refused:
    why `repo` can't be used. The run works on this commit, whatever is committed there meanwhile."""
    if not repo.is_dir():
        raise Refused(f"--repo {repo} is not a directory")
    try:
        with quarantined(repo) as git_dir:
            return git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], git_dir=git_dir).strip()
    except GitError as exc:
        if "not a git repository" in str(exc):
            raise Refused(f"--repo {repo} is not a git checkout: run `git init` there first") from None
        raise Refused(f"--repo {repo} has no commit yet: the change is diffed against HEAD") from None


def repo_config(repo: Path) -> RepoConfig:
    """The checkout's own `.github/mini-fix.yml` (its `test`, `reproduce`, `setup`, ... judge the attempts)."""
    local = "local/checkout"

    def read(target: str, path: str) -> str | None:
        file = repo / path
        return file.read_text(encoding="utf-8") if target == local and file.is_file() else None

    return load_repo_config(local, read).config


def run_config(flags: Flags, repo: RepoConfig, settings: Settings) -> RunConfig:
    """The run configured as the App would configure the job (runconfig.resolve): the checkout's
    `.github/mini-fix.yml` within this deployment's ceilings, the flags over everything, `-c` replacing our file."""
    agent_file = runconfig.agent_file(settings, flags.config)
    print_ignored(agent_file)
    return runconfig.resolve(settings, agent_file, repo, flags)


@dataclass(frozen=True)
class Ready:
    """A run ready to start: the commit it works on and its settled configuration."""

    head: str
    settled: Settled


@dataclass(frozen=True)
class LocalRun:
    """One `mini-fix run` as the command line fixed it: what it is given and this deployment's settings. Its steps
    run in the App's order: `configured` (every refusal before anything starts), then `driver` for the flow on
    this machine (`onhost.attempted`), then `written`."""

    given: LocalGiven
    settings: Settings

    def configured(self) -> Ready:
        """The run's commit and configuration, as the App's: the checkout's config file within the ceilings and the
        flags over it (`runconfig.resolve`), then what the checkout settles, setup and tests (`runconfig.settle`).
        Refused: a checkout that can't be used, a config file that can't be read, a self-hosted model with no
        address."""
        given, settings = self.given, self.settings
        head = checked_head(given.checkout)
        try:
            repo = repo_config(given.checkout)
        except ConfigError as exc:
            raise Refused(str(exc)) from None
        resolved = run_config(given.flags, repo, settings)
        settled = runconfig.settle(resolved, given.checkout, settings)
        if problem := missing_api_base(settled.config.model):  # before any sandbox or model call, as the App's
            raise Refused(f"{problem}: {API_BASE_HINT}")
        return Ready(head, settled)

    def driver(self, ready: Ready, progress: Progress) -> LocalDriver:
        """The run's part of the flow on this machine: the checked HEAD, the plan, the task."""
        return LocalDriver(self.given, ready, self.settings, progress)


@dataclass(frozen=True)
class LocalDriver:
    """`mini-fix run` in `onhost.attempted`: a clean clone of the checked HEAD (the worker's git, through the
    quarantine), the plan the run settled, the task as given."""

    given: LocalGiven
    ready: Ready
    settings: Settings
    progress: Progress

    @property
    def source(self) -> str:
        return str(self.given.checkout)

    @property
    def commit(self) -> str:
        return self.ready.head

    @property
    def secrets(self) -> list[str]:
        return self.settings.secrets

    def planned(self, checkout: Path) -> Planned:
        """The attempts of one local run: the shared runtime, output under `given.output`, progress as it comes (an
        inferred setup's failure is reported and the run goes on: the plan's `setup_tolerant`). The plan is the one
        settled on the checkout before the clone (the same commit)."""
        given, settled, settings, progress = self.given, self.ready.settled, self.settings, self.progress
        resolved, run_id, output = settled.config, given.run_id, given.output
        name = str(given.checkout.resolve())
        runtime = Runtime(settings)
        options = SetupOptions.from_settings(settings)
        setup = RepoSetup(name, options, on_report=progress.on_setup, trust_clean_trees=True)
        plan = AttemptPlan.of(
            resolved,
            settled.tested,
            run_id=run_id,
            factory=setup.bind(runtime.sandboxes()),  # the App's setup time limit and cache, for attempts and verify
            make_model=runtime.model,
            trajectory_path=lambda rid: (
                output / "trajectory.json" if rid == run_id else output / rid / "trajectory.json"
            ),
            meta={"repo": name, "profile": resolved.profile},
            cancel=threading.Event(),  # nothing stops a local run but ^C
            on_step=progress.on_step,
            on_end=progress.on_end,
        )
        return Planned(plan, given.task)


def written(judgement: Judgement, output: Path, count: int) -> Written:
    """patch.diff (the chosen change) and, with several attempts, each attempt's patch and attempts.md; what to say,
    and the exit code (a sandbox that fails ends its attempt: 3 when none ran)."""
    output.mkdir(parents=True, exist_ok=True)
    runs, choice = judgement.attempts, judgement.choice
    chosen = next((run for run in runs if run.candidate is choice.chosen), None)
    if count > 1:
        for run in runs:
            change = run.candidate.change
            place = output / run.candidate.run_id
            place.mkdir(parents=True, exist_ok=True)
            (place / "patch.diff").write_text(change.diff if change else "")
        if chosen is not None and chosen.trajectory is not None:
            shutil.copyfile(chosen.trajectory, output / "trajectory.json")
    diff = chosen.candidate.change.diff if chosen is not None and chosen.candidate.change else ""
    (output / "patch.diff").write_text(diff)
    reasons = [f"attempt {run.candidate.index}: {choice.reasons.get(run.candidate.index, '')}" for run in runs]
    summary = _summary(chosen or runs[0], diff, output, chosen=chosen is not None, count=count)
    if count > 1:  # last: the summary names attempts.md, written before the command returns
        links = {run.candidate.index: str(run.trajectory) if run.trajectory else None for run in runs}
        (output / "attempts.md").write_text(attempts_table(choice, judgement.candidates, links))
        return Written(summary.code, (*reasons, *summary.out), summary.err)
    return summary


def _summary(run: Attempt, diff: str, output: Path, *, chosen: bool, count: int) -> Written:
    result = run.result
    out: tuple[str, ...] = ()
    if result is not None:
        tokens = result.prompt_tokens + result.completion_tokens
        files = sum(1 for line in diff.splitlines() if line.startswith("diff --git"))
        out = (
            f"{result.exit_status}: {result.steps} steps, {tokens} tokens, {result.elapsed_seconds:.1f}s, "
            f"{files} file(s) changed; trajectory {output / 'trajectory.json'}, patch {output / 'patch.diff'}",
        )
    if chosen:
        return Written(0, out)
    if count > 1:
        return Written(
            1, (*out, f"mini-fix: none of the {count} attempts left a change to propose (see {output / 'attempts.md'})")
        )
    if result is not None and result.exit_status == SUBMITTED:  # submitted, as the contract says: exit 0
        refused = f": it touches {', '.join(run.candidate.refused)}" if run.candidate.refused else ""
        return Written(0, out, (f"mini-fix: submitted, but there is no change to propose{refused}",))
    if result is None:
        failure = run.failure
        detail = (failure.detail or str(failure.outcome)) if failure else "the agent did not run"
        sandbox = failure is not None and failure.outcome in SANDBOX_OUTCOMES
        why = f"mini-fix: {'sandbox failed' if sandbox else 'the agent did not run'}: {detail}"
        return Written(3 if sandbox else 1, out, (why,))
    detail = str(result.messages[-1].get("content", "")) if result.messages else ""
    err = [f"mini-fix: not submitted ({result.exit_status}): {exit_for(result.exit_status).hint}"]
    if detail and detail != result.exit_status:
        err.append(f"  {detail}")
    return Written(1, out, tuple(err))
