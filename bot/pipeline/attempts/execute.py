"""The pipeline's middle steps: clone on the worker, start the sandbox, run the agent, take the diff."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from bot.agent.config import MiniFixAgentConfig
from bot.agent.loop import Agent, AgentResult, StepEvent
from bot.agent.model_base import Model, ModelReply
from bot.github.gateway import GitHubGateway, RepoInfo
from bot.jobs import Job, Outcome
from bot.pipeline.attempts import testrun
from bot.pipeline.attempts.exits import SUBMITTED, exit_for
from bot.pipeline.attempts.setup_cache import Lookup, RepoSetup, setup_of
from bot.pipeline.attempts.testrun import NOT_RUN
from bot.pipeline.change import Change, ChangeCaps, compute_change, excluded_paths, setup_excludes
from bot.pipeline.errors import ChangeTooLarge, RunFailed
from bot.pipeline.git import gitops
from bot.pipeline.task.outline import outline
from bot.trajectory import TrajectoryWriter
from sandbox.base import (
    EngineUnavailable,
    ExportCap,
    ExportTooLarge,
    ImageMissing,
    Sandbox,
    SandboxConfig,
    SandboxError,
)

CLONE_DEPTH = 50
_FIXES = re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s+#(\d+)\b", re.IGNORECASE)
# Most specific first: the first matching class names the outcome.
SANDBOX_FAILURES: list[tuple[type[SandboxError], Outcome]] = [
    (ImageMissing, Outcome.IMAGE_MISSING),
    (EngineUnavailable, Outcome.SANDBOX_UNAVAILABLE),
    (SandboxError, Outcome.SANDBOX_FAILED),
]


@contextmanager
def sandbox_errors() -> Iterator[None]:
    """A sandbox error raised inside becomes the run's outcome (RunFailed); anything else passes through."""
    try:
        yield
    except SandboxError as exc:
        raise RunFailed(sandbox_outcome(exc), str(exc)) from exc


@contextmanager
def closed_on_cancel(sandbox: Sandbox, cancel: threading.Event, poll: float = 0.5) -> Iterator[None]:
    """Remove the container as soon as `cancel` is set, so `/agent stop` ends a long action now, not at its
    timeout; what fails inside because of it is reported as `cancelled`. Leaving the block does not wait for the
    watcher's next poll (that was up to `poll` seconds at the end of every run): once it is left, the watcher
    never closes the sandbox, and ends by itself at its next wake-up."""
    done = threading.Event()
    lock = threading.Lock()

    def watch() -> None:
        while not done.is_set():
            if cancel.wait(poll):
                with lock:
                    if not done.is_set():
                        sandbox.close()
                return

    threading.Thread(target=watch, name="cancel-watch", daemon=True).start()
    try:
        yield
    except RunFailed as exc:
        if cancel.is_set():
            raise RunFailed(Outcome.CANCELLED) from exc
        raise
    finally:
        with lock:  # a close the watcher began finishes first; after this it closes nothing
            done.set()


def issue_number(gh: GitHubGateway, job: Job) -> int:
    """The issue a job is about; a retry asked for on a PR names it in the PR body (`Fixes #N`)."""
    if not job.details.on_pull_request:
        return job.issue
    match = _FIXES.search(gh.get_pr(job.issue).body)
    if match is None:
        raise RunFailed(Outcome.GITHUB_FAILED, f"pull request #{job.issue} does not say which issue it fixes")
    return int(match.group(1))


def clone(repo: RepoInfo, token: gitops.Token, dest: Path, *, max_bytes: int, branch: str | None = None) -> None:
    """Clone `branch` (the default one unless named) into `dest` with the token in a header only; refuse one over
    `max_bytes`."""
    try:
        gitops.clone(repo.clone_url, token, dest, branch=branch or repo.default_branch, depth=CLONE_DEPTH)
    except gitops.GitError as exc:
        raise RunFailed(Outcome.CLONE_FAILED, git_failure(exc)) from exc
    size = tree_bytes(dest)
    if size > max_bytes:
        detail = f"the clone holds {size:,} bytes, over the limit of {max_bytes:,} (MINIFIX_MAX_CLONE_BYTES)"
        raise RunFailed(Outcome.CLONE_FAILED, detail)


def git_failure(exc: gitops.GitError) -> str:
    """A clone, fetch or push failure for the comment: a transient one (retried) told apart from GitHub refusing
    the App's token (a permission or installation problem, never retried)."""
    if exc.transient:
        return f"a transient failure of GitHub or the network: {exc}"  # the message says how often it was retried
    if gitops.is_refusal(str(exc)):
        return f"GitHub refused the App's token (a permission or installation problem, not retried): {exc}"
    return str(exc)


def tree_bytes(root: Path) -> int:
    """Bytes of the regular files under `root` (links not followed)."""
    total = 0
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            total += path.lstat().st_size
    return total


class EarlySandbox:
    """The run's container, started in the background while the worker clones: neither waits for the other."""

    def __init__(self, factory: Callable[[SandboxConfig, str], Sandbox], config: SandboxConfig, run_id: str) -> None:
        self.config = config
        self._result: Sandbox | BaseException | None = None
        self._taken = False
        self._thread = threading.Thread(
            target=self._start, args=(factory, config, run_id), name="sandbox-start", daemon=True
        )
        self._thread.start()

    def _start(self, factory: Callable[[SandboxConfig, str], Sandbox], config: SandboxConfig, run_id: str) -> None:
        try:
            self._result = factory(config, run_id)
        except Exception as exc:  # handed to the pipeline's thread by take()
            self._result = exc

    def take(self, checkout: Path) -> Sandbox:
        """The started sandbox with the checkout copied in; sandbox errors become their outcome."""
        self._thread.join()
        self._taken = True
        if isinstance(self._result, BaseException):
            with sandbox_errors():
                raise self._result
        assert self._result is not None
        sandbox = self._result
        try:
            with sandbox_errors():
                sandbox.copy_in(checkout)
        except RunFailed:
            sandbox.close()
            raise
        return sandbox

    def discard(self) -> None:
        """Remove the container if the run never took it (the clone failed, the run was stopped)."""
        if not self._taken:
            self._thread.join()
            self._taken = True
            if self._result is not None and not isinstance(self._result, BaseException):
                self._result.close()


def sandbox_outcome(exc: SandboxError) -> Outcome:
    """The outcome of a sandbox failure."""
    return next(key for cls, key in SANDBOX_FAILURES if isinstance(exc, cls))


def run_agent(
    model: Model,
    sandbox: Sandbox,
    config: MiniFixAgentConfig,
    task: str,
    *,
    trajectory: TrajectoryWriter,
    on_step: Callable[[StepEvent], None],
    cancel: threading.Event,
    checkout: Path,
    testing: dict[str, str] | None = None,
) -> AgentResult:
    """Run the agent; a crash inside it ends the run as `agent_crashed` (its trajectory is already saved)."""
    agent = Agent(model, sandbox, config, trajectory=trajectory, on_step=on_step, cancel=cancel)
    try:
        with sandbox_errors():
            extra = {**sandbox.template_vars(), **(testing or {})}
            return agent.run(task, **extra, repo_files=outline(gitops.tracked_files(checkout)))
    except RunFailed:
        raise
    except Exception as exc:
        raise RunFailed(Outcome.AGENT_CRASHED, f"{type(exc).__name__}: {exc}") from exc


class TimedModel:
    """A model that adds up the time spent waiting for its replies (an attempt's model-time cost), telling
    `on_time` the total after each call (the job's budget: a model-second quota's bound)."""

    def __init__(self, model: Model, on_time: Callable[[float], None] | None = None) -> None:
        self.model, self.name, self.seconds, self.on_time = model, model.name, 0.0, on_time

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        """The wrapped model's reply, timed."""
        began = time.monotonic()
        try:
            return self.model.query(messages)
        finally:
            self.seconds += time.monotonic() - began
            if self.on_time is not None:
                self.on_time(self.seconds)


def take_change(
    sandbox: Sandbox,
    checkout: Path,
    dest: Path,
    *,
    max_bytes: int,
    exclude: str = "",
    caps: ChangeCaps | None = None,
    exported: Callable[[], None] | None = None,
) -> Change:
    """The agent's change: the tree taken out as files (capped by bytes, and by entries as it goes when `caps` are
    given: `export_cap`), diffed against the clone by the worker's git; `exported` is called once the tree is out
    (the sandbox is not needed for the diff)."""
    try:
        with sandbox_errors():
            sandbox.export_tree(dest, max_bytes=export_cap(checkout, max_bytes, caps, exclude))
    except RunFailed as exc:
        if isinstance(exc.__cause__, ExportTooLarge):
            raise RunFailed(Outcome.LIMITS, str(exc.__cause__)) from exc.__cause__
        raise
    if exported is not None:
        exported()
    try:
        return compute_change(checkout, dest, exclude=exclude, caps=caps)
    except ChangeTooLarge as exc:
        raise RunFailed(Outcome.LIMITS, str(exc)) from exc
    except gitops.GitError as exc:
        raise RunFailed(Outcome.SANDBOX_FAILED, f"the change could not be read: {exc}") from exc


EXPORT_SLACK = 10_000  # entries beyond twice the checkout's and the caps': build output git ignores, caches


def export_cap(checkout: Path, max_bytes: int, caps: ChangeCaps | None, exclude: str = "") -> int:
    """The export's caps: `max_bytes`, and with `caps` an ExportCap of twice the checkout's tracked files and
    directories (a compiled file and a cache directory each, say) plus twice MINIFIX_MAX_CHANGED_FILES (a new file
    in a new directory each) plus EXPORT_SLACK; what setup left untracked (`exclude`) is read past. A tree past it
    could not be a change within the caps, and stopping as it goes spares the worker's disk and time."""
    if caps is None:
        return max_bytes
    listing = gitops.git_bytes(["ls-files", "-z"], cwd=checkout, what="git ls-files", timeout=120)
    files = [p for p in listing.split(b"\0") if p]
    dirs = {parent for p in files for parent in _parents(p)}
    entries = 2 * (len(files) + len(dirs)) + 2 * caps.files + EXPORT_SLACK
    # The listing is the sandbox's word: a path that is, or holds, a tracked file is never read past.
    tracked = {os.fsdecode(p) for p in (*files, *dirs)}
    skip = tuple(p for p in excluded_paths(exclude) if p.rstrip("/") and p.rstrip("/") not in tracked)
    return ExportCap(max_bytes, entries=entries, skip=skip)


def _parents(path: bytes) -> list[bytes]:
    parts = path.split(b"/")[:-1]
    return [b"/".join(parts[: i + 1]) for i in range(len(parts))]


def require_submission(result: AgentResult) -> None:
    """Raise the run's outcome unless the agent submitted."""
    if result.exit_status != SUBMITTED:
        detail = f"{result.exit_status}: {result.detail}" if result.detail else result.exit_status
        raise RunFailed(exit_for(result.exit_status).outcome, detail)


SETUP_TIMEOUT = 1800  # seconds all setup commands may take together where no RepoSetup says (installs are slow)
TEST_TIMEOUT = 1800  # seconds for one run of a test command: the attempt's, verify's and eval's alike
OUTPUT_TAIL = 3000
# Whatever setup left untracked (a virtualenv, node_modules, build output) stays out of the agent's diff.
EXCLUDE_SETUP_OUTPUT = "git ls-files --others --exclude-standard --directory >> .git/info/exclude"
LIST_SETUP_OUTPUT = "git ls-files -z --others --exclude-standard --directory"


@runtime_checkable
class Offline(Protocol):
    """A sandbox started with a network for its setup phase, which can cut it before the agent starts."""

    def disconnect_network(self) -> None:
        """Remove every network from the container; the agent then runs with loopback only."""
        ...


def run_setup(sandbox: Sandbox, commands: list[str], *, networked: bool, checkout: Path, tolerant: bool = False) -> str:
    """Run the repository's setup commands in order (or restore their cached result), lay the commit's files
    back, then cut the network; a failing command, or a setup past its time limit, ends the run.

    `checkout` is the worker's tree the sandbox was given: copied in again after setup (or a restore), so a tracked
    file setup rewrote, deleted or replaced by a link (even one it hid from the sandbox's git with skip-worktree)
    is as committed before the agent starts, and never reaches the agent's diff. The sandbox's own git is not
    asked: setup may have changed `.git` too, which the copy also lays back.

    Returns exclude patterns for what setup left untracked (a virtualenv, node_modules), for the host's diff:
    a listing from the sandbox can only keep files out of the change, never put any in. A restored result leaves
    the same files, so the same patterns. The repository's setup (time limit, cache) rides on the sandbox
    (`setup_cache.RepoSetup.bind`); a bare sandbox gets SETUP_TIMEOUT and no cache. `tolerant`: an inferred setup
    (the plan says so, `RunConfig.setup_inferred`), whose failure is reported and the run goes on."""
    setup, copied = setup_of(sandbox)
    excludes = ""
    with sandbox_errors():
        if commands:
            lookup = setup.lookup(sandbox, commands, networked, copied) if setup else None
            if lookup is None or not lookup.restored:
                _setup_now(sandbox, commands, setup, lookup, tolerant=tolerant)
            sandbox.copy_in(checkout)  # the commit's files as committed, whatever setup or a restore wrote
            excludes = setup_excludes(sandbox.execute(LIST_SETUP_OUTPUT).output)
            sandbox.execute(EXCLUDE_SETUP_OUTPUT)
        if networked:
            if not isinstance(sandbox, Offline):
                raise RunFailed(Outcome.SANDBOX_FAILED, "this sandbox cannot cut its network after setup")
            sandbox.disconnect_network()
    return excludes


def _setup_now(
    sandbox: Sandbox, commands: list[str], setup: RepoSetup | None, lookup: Lookup | None, *, tolerant: bool
) -> None:
    """Run the setup commands and store their result; an inferred setup (`tolerant`) that fails is reported and
    the run goes on (its checks then say the tests could not run), and is not run again in the job's sandboxes."""
    if setup and tolerant and setup.failure:
        return
    started = time.monotonic()
    try:
        _run_commands(sandbox, commands, setup.options.timeout if setup else SETUP_TIMEOUT)
    except RunFailed as exc:
        if not (setup and tolerant):
            raise
        sandbox.end_processes()
        setup.failed(time.monotonic() - started, exc.detail)
        return
    sandbox.end_processes()  # nothing setup started may outlive it into the agent's phase or the save
    if setup and lookup:
        setup.ran(sandbox, lookup, time.monotonic() - started, sandbox_cwd(sandbox))


def _run_commands(sandbox: Sandbox, commands: list[str], limit: int) -> None:
    """Each command in turn, all of them within `limit` seconds together."""
    deadline = time.monotonic() + limit
    for command in commands:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RunFailed(Outcome.SETUP_FAILED, f"setup took longer than {limit} s (MINIFIX_SETUP_TIMEOUT)")
        result = sandbox.execute(command, timeout=max(1, int(left)))
        if result.exception_info and deadline - time.monotonic() <= 2:  # killed at the limit it was given
            raise RunFailed(
                Outcome.SETUP_FAILED, f"setup took longer than {limit} s (MINIFIX_SETUP_TIMEOUT): `{command}`"
            )
        if result.returncode != 0:
            tail = result.output[-OUTPUT_TAIL:]
            raise RunFailed(Outcome.SETUP_FAILED, f"`{command}` exited with {result.returncode}:\n{tail}")


def sandbox_cwd(sandbox: Sandbox) -> str:
    """The sandbox's working directory, from its config where it has one (DockerSandbox)."""
    config = getattr(sandbox, "config", None)
    return config.cwd if isinstance(config, SandboxConfig) else SandboxConfig().cwd


def run_test(sandbox: Sandbox, command: str, *, changed: str = "") -> dict[str, object]:
    """Run the repository's test command after the agent: command, return code (the engine's own exec exit code,
    not anything the agent's processes could write), the output's tail, and the verdict the host reads from the
    exit code and the runner's own summary (`testrun.read`: `passed` only when tests ran and none failed; `verdict`
    passed, failed, no tests ran or could not run; `summary` why). `changed`: the diff under test (a package only
    its added lines name, missing from the sandbox, is the change's failure, not "could not run")."""
    try:
        result = sandbox.run_check(command, timeout=TEST_TIMEOUT)
    except SandboxError as exc:
        failed = {"passed": False, "verdict": NOT_RUN, "summary": f"the sandbox failed: {exc}"}
        return {"command": command, "returncode": -1, "output": str(exc), **failed}
    output = result.output[-OUTPUT_TAIL:] + (f"\n{result.exception_info}" if result.exception_info else "")
    timed_out = bool(result.exception_info)
    reading = testrun.read(result.output, result.returncode, command, timed_out=timed_out, changed=changed)
    return {"command": command, "returncode": result.returncode, "output": output, **reading.fields()}
