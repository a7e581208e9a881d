"""The App's own check of every attempt, in fresh sandboxes the agent never touched; verdicts are returned.

For each acceptable candidate: its reproduction test (its new or changed test files) must fail on the base commit
and pass with its whole change; the repository's `test` command runs on its change; and every other attempt's valid
reproduction runs on its tree (cross-validation). Verdicts are the engine's exit codes read together with the
runner's own summary at the end of the output (`testrun.py`): 0 tests is "no tests ran", a summary that counts
failures fails, and a missing tool, module or dependency is "could not run the tests", never a "fails before".
On the worker alone, from the same trees: which existing tests its change drops (`dropped.py`).

Sandboxes per candidate: one for the base commit + its test files only (nothing else has run there, so no state
left by another run can change the verdict); one for its whole change (its reproduction first, then `test`); and,
when other attempts have valid reproductions, one more with those test files laid over its change (a second one
only where two of them name the same path). Each is made as an attempt's was: the base commit copied in, the
repository's setup run on it (with the attempts' network, cut when setup ends), then the tree laid over it, so
setup never runs agent-written code; with no setup the tree (a clone of the base commit, the change applied) is
copied in at once. A sandbox whose verdict is in is removed while the job goes on (`capacity.Removals`).

The candidates are checked at once, each in its own thread (its own checks one after another, then, once every
candidate's reproduction is known, the cross-checks at once again). Every sandbox takes one of the worker's slots
(`capacity.SandboxSlots`, shared with the attempts) before it starts and gives it back once it is gone; no check
waits for a slot while holding one. A check that crashes ends that candidate's verification, never the others'.
"""

from __future__ import annotations

import contextvars
import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from bot.pipeline.attempts import testrun
from bot.pipeline.attempts.execute import OUTPUT_TAIL, TEST_TIMEOUT, closed_on_cancel, run_test
from bot.pipeline.candidates import Candidate, DroppedTests, Reproduction, Verdict
from bot.pipeline.capacity import Removals, SandboxSlots, remove
from bot.pipeline.errors import RunFailed, SetupFailed
from bot.pipeline.git.gitops import GitError
from bot.pipeline.judge import dropped, reproduce, trees
from bot.pipeline.judge.testbed import SandboxFactory, prepare
from bot.repo_config.schema import RepoConfig
from sandbox.base import Sandbox, SandboxConfig, SandboxError

STOPPED = "stopped before it was verified"
log = structlog.get_logger(__name__)


@dataclass
class _Built:
    """A candidate's trees on the worker, its reproduction test files, and its verdict as the checks find it."""

    candidate: Candidate
    after: Path | None  # base commit + its whole change; None: the change did not apply
    files: list[str] = field(default_factory=list)  # its new or changed test files
    runnable: list[str] = field(default_factory=list)  # the ones the reproduce command is given
    names: list[str] = field(default_factory=list)  # the test functions its change adds to them (Go, Rust)
    test: dict[str, Any] | None = None
    reproduction: Reproduction | None = None
    dropped: DroppedTests | None = None
    cross: dict[int, bool] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """Its reproduction failed before and passed after."""
        return self.reproduction is not None and self.reproduction.valid

    def verdict(self) -> Verdict:
        """What the checks found, frozen."""
        return Verdict(test=self.test, reproduction=self.reproduction, dropped=self.dropped, cross=dict(self.cross))


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
    slots: SandboxSlots | None = None,
    removals: Removals | None = None,
    setup_tolerant: bool = False,
) -> dict[int, Verdict]:
    """Each acceptable candidate's verdict (`test`, `reproduction`, `dropped`, `cross`) by attempt index, from fresh
    sandboxes, the candidates at once within `slots` (None: no bound); never raises for a candidate's problem: its
    `detail` or `test` says what went wrong."""
    with tempfile.TemporaryDirectory(prefix="verify-", dir=workdir) as tmp:
        bench = _Bench(
            checkout, factory, sandbox_config, repo, run_id, Path(tmp), cancel, slots or SandboxSlots(0), removals,
            setup_tolerant,
        )  # fmt: skip
        built = [bench.build(c) for c in candidates if c.acceptable]
        ready = [b for b in built if b.after is not None]
        _each(ready, bench.own, bench.crashed)
        _each(ready, lambda b: bench.cross(b, [o for o in ready if o is not b and o.valid]), _log_crash)
    return {b.candidate.index: b.verdict() for b in built}


def _each(built: list[_Built], check: Callable[[_Built], None], crashed: Callable[[_Built, Exception], None]) -> None:
    """`check` every candidate at once, each in its own thread (with the caller's log context); `crashed` for
    each one whose check raised, once all have ended. The verdicts are each candidate's own: no order matters."""
    if not built:
        return
    with ThreadPoolExecutor(max_workers=len(built), thread_name_prefix="verify") as pool:
        futures = [(b, pool.submit(contextvars.copy_context().run, check, b)) for b in built]
    for b, future in futures:
        if isinstance(exc := future.exception(), Exception):
            crashed(b, exc)


def _log_crash(b: _Built, exc: Exception) -> None:
    log.error("verify_crashed", attempt=b.candidate.index, exc_info=exc)


@dataclass
class _Bench:
    """What every verification of one job shares."""

    checkout: Path  # the worker's clone at the base commit, as the attempts got it: what setup runs on
    factory: SandboxFactory
    config: SandboxConfig
    repo: RepoConfig
    run_id: str
    tmp: Path
    cancel: threading.Event
    slots: SandboxSlots  # the worker's; each sandbox here holds one while it lives
    removals: Removals | None = None  # the job's background removals (None: each sandbox removed at once)
    tolerant: bool = False  # an inferred setup: its failure does not end the check (the tests then cannot run)

    def build(self, c: Candidate) -> _Built:
        """The candidate's after-tree and test files; with no tree (the reason recorded) when its change won't
        apply."""
        assert c.change is not None
        after = self.tmp / f"{c.index}-after"
        try:
            trees.base_tree(self.checkout, after)
            trees.apply(after, c.change.diff)
        except GitError as exc:
            why = f"its change could not be applied to the base commit on the worker: {exc}"
            return _Built(c, None, reproduction=Reproduction(files=[], detail=why), test=self._not_run(why))
        files = reproduce.test_files(c.change.paths, self.repo.test_paths, lambda p: trees.present(after, p))
        template, _ = reproduce.template(self.repo)
        runnable = reproduce.runnable(template, files) if template else files
        built = _Built(c, after, files, runnable, reproduce.added_tests(c.change.diff, runnable))
        try:
            built.dropped = dropped.dropped_tests(
                self.checkout, after, c.change.paths, self.repo.test_paths, self.cancel
            )
        except (GitError, OSError):
            log.warning("dropped_tests_not_checked", attempt=c.index, exc_info=True)
        return built

    def own(self, b: _Built) -> None:
        """Its reproduction on the base commit (must fail) and with its change (must pass), and `test`."""
        rep = b.reproduction = Reproduction(files=b.files)
        template, why = reproduce.template(self.repo)
        if not b.files:
            rep.detail = "it added or changed no test file (`test_paths`), so there is no reproduction test"
        elif template is None:
            rep.detail = why
        elif not b.runnable:
            rep.detail = f"none of its test files ({', '.join(b.files)}) can be run by the reproduce command"
        else:
            rep.command = reproduce.command(template, b.runnable, b.names)
            self._before(b, rep)
        self._after(b, rep)
        rep.detail = rep.detail or _verdict_detail(rep)

    def _before(self, b: _Built, rep: Reproduction) -> None:
        tree = self.tmp / f"{b.candidate.index}-before"
        assert b.candidate.change is not None
        try:
            trees.base_tree(self.checkout, tree)
            trees.apply(tree, b.candidate.change.diff, only=b.files)
        except GitError as exc:
            rep.detail = f"its test files could not be applied to the base commit alone: {exc}"
            return

        def run(sandbox: Sandbox) -> None:
            reading, rep.before = _check(sandbox, rep.command)
            rep.before_verdict = reading.text()
            paths = b.candidate.change.paths if b.candidate.change is not None else []
            if reading.missing_module and testrun.provided(reading.missing_module, paths):
                rep.fails_before = True  # it imports a module its fix adds: a real failure, not the sandbox's
                return
            if reading.verdict == testrun.NOT_RUN:
                rep.detail = f"could not run the tests on the base commit: {reading.why}"
            elif reading.verdict == testrun.NO_TESTS:
                rep.detail = f"its reproduce command ran no test on the base commit ({reading.why})"
            else:  # not a "fails before" when nothing ran
                rep.fails_before = reading.verdict == testrun.FAILED

        rep.detail = self._session(tree, f"{b.candidate.index}-before", run) or rep.detail
        shutil.rmtree(tree, ignore_errors=True)

    def _after(self, b: _Built, rep: Reproduction) -> None:
        if not self.repo.test and rep.fails_before is not True:
            return  # nothing to learn from the change's own sandbox
        diff = b.candidate.change.diff if b.candidate.change is not None else ""

        def run(sandbox: Sandbox) -> None:
            if rep.fails_before is True:
                reading, rep.after = _check(sandbox, rep.command, changed=diff)
                rep.after_verdict = reading.text()
                if reading.verdict == testrun.NOT_RUN:
                    rep.detail = f"could not run the tests with its change: {reading.why}"
                else:
                    rep.passes_after = reading.ok
            if self.repo.test:
                b.test = run_test(sandbox, self.repo.test, changed=diff)

        assert b.after is not None
        failed = self._session(b.after, f"{b.candidate.index}-after", run)
        if failed:
            rep.detail = rep.detail or failed
            if self.repo.test and b.test is None:
                b.test = self._not_run(failed)

    def cross(self, b: _Built, others: list[_Built]) -> None:
        """Every other valid reproduction, run on this candidate's change (`cross[other index]`)."""
        template, _ = reproduce.template(self.repo)
        if template is None:
            return
        for n, layer in enumerate(_layers(others)):
            tree = self.tmp / f"{b.candidate.index}-cross-{n}"
            assert b.after is not None
            try:
                shutil.copytree(b.after, tree, symlinks=True)
                for other in layer:
                    assert other.after is not None
                    trees.overlay(other.after, tree, other.files)
            except OSError:
                continue  # no verdict: this candidate simply gets no cross credit for this layer

            def run(sandbox: Sandbox, layer: list[_Built] = layer) -> None:
                for other in layer:
                    reading, _ = _check(sandbox, reproduce.command(template, other.runnable, other.names))
                    b.cross[other.candidate.index] = reading.ok

            self._session(tree, f"{b.candidate.index}-cross-{n}", run)
            shutil.rmtree(tree, ignore_errors=True)

    def crashed(self, b: _Built, exc: Exception) -> None:
        """A bug while checking this candidate: said in its reproduction and `test`, the others unaffected."""
        _log_crash(b, exc)
        why = f"its verification crashed: {type(exc).__name__}: {exc}"
        b.reproduction = b.reproduction or Reproduction(files=b.files)
        b.reproduction.detail = STOPPED if self.cancel.is_set() else why
        if self.repo.test and b.test is None:
            b.test = self._not_run(why)

    def _session(self, tree: Path, what: str, body: Callable[[Sandbox], None]) -> str:
        """Run `body` in a fresh sandbox holding `tree` (setup run), holding one slot; '' or why it could not
        finish. The slot goes back once the sandbox is gone (removed in the background with `removals`)."""
        if not self.slots.take(self.cancel):
            return STOPPED
        # With no setup to run on the base commit first, the tree (a clone, .git and all) is copied in at once.
        base = self.checkout if self.repo.setup else tree
        try:
            ready = prepare(
                self.factory, self.config, f"{self.run_id}-verify-{what}", base, self.repo, tolerant=self.tolerant
            )
        except BaseException as exc:
            self.slots.give()
            if isinstance(exc, (SetupFailed, SandboxError, RunFailed)):
                return self._failed(exc)
            raise
        try:
            with closed_on_cancel(ready.sandbox, self.cancel):
                if base != tree:
                    _lay_over(ready.sandbox, self.checkout, tree)
                body(ready.sandbox)
        except (SetupFailed, SandboxError, RunFailed) as exc:
            return self._failed(exc)
        finally:  # the verdict is in: the container may go while the job moves on
            remove(ready.sandbox, self.slots, self.removals)
        return ""

    def _failed(self, exc: Exception) -> str:
        return STOPPED if self.cancel.is_set() else f"the verification sandbox failed: {exc}"

    def _not_run(self, why: str) -> dict[str, Any]:
        failed = {"passed": False, "verdict": testrun.NOT_RUN, "summary": why}
        return {"command": self.repo.test, "returncode": -1, "output": f"not run: {why}", **failed}


def _lay_over(sandbox: Sandbox, base: Path, tree: Path) -> None:
    """Make the sandbox's base checkout (setup's output kept) hold `tree`: its files copied over, the files it
    deleted removed (the list from the worker's own walk of both trees)."""
    sandbox.copy_in(tree)
    gone = sorted(trees.files(base) - trees.files(tree))
    for start in range(0, len(gone), 200):
        names = " ".join(shlex.quote(path) for path in gone[start : start + 200])
        result = sandbox.run_check(f"rm -f -- {names}", timeout=TEST_TIMEOUT)
        if result.returncode != 0:
            raise SandboxError(f"could not remove the files the change deletes: {result.output[-OUTPUT_TAIL:]}")


def _check(sandbox: Sandbox, command: str, *, changed: str = "") -> tuple[testrun.Reading, str]:
    """What the host reads from the run (the engine's exit code, a timeout, the runner's summary; `changed`: the
    diff under test) and the output's tail."""
    result = sandbox.run_check(command, timeout=TEST_TIMEOUT)
    tail = result.output[-OUTPUT_TAIL:] + (f"\n{result.exception_info}" if result.exception_info else "")
    timed_out = bool(result.exception_info)
    return testrun.read(result.output, result.returncode, command, timed_out=timed_out, changed=changed), tail


def _verdict_detail(rep: Reproduction) -> str:
    if rep.fails_before is False:
        return "its test passes on the base commit too, so it does not reproduce the issue"
    if rep.fails_before is True and rep.passes_after is False:
        return "its test fails with its own change applied" + (f": {rep.after_verdict}" if rep.after_verdict else "")
    return ""


def _layers(others: list[_Built]) -> list[list[_Built]]:
    """Groups of reproductions whose files do not collide, so each group shares one sandbox."""
    layers: list[tuple[set[str], list[_Built]]] = []
    for other in others:
        for taken, members in layers:
            if taken.isdisjoint(other.files):
                taken.update(other.files)
                members.append(other)
                break
        else:
            layers.append((set(other.files), [other]))
    return [members for _, members in layers]
