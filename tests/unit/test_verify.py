"""verify() with the host-side fake sandbox: which runs happen where, and what each candidate's fields say."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from bot.pipeline.candidates import Candidate, DroppedTests
from bot.pipeline.capacity import SandboxSlots
from bot.pipeline.change import Change
from bot.pipeline.judge.ranking import choose
from bot.pipeline.judge.verify import STOPPED, verify
from bot.repo_config.schema import RepoConfig
from sandbox.base import ExecResult, SandboxConfig, SandboxError
from tests.support.candidates import CLAIM, FIX, REPO_TEST, REPRO, calc_base, candidate
from tests.support.fake_sandbox import FakeSandbox


class Factory:
    """Fresh fake sandboxes, remembered by run id with the tree each was given."""

    def __init__(self) -> None:
        self.started: dict[str, FakeSandbox] = {}
        self.trees: dict[str, dict[str, str]] = {}
        self.configs: list[SandboxConfig] = []
        self.disconnected: list[str] = []

    def __call__(self, config: SandboxConfig, run_id: str) -> FakeSandbox:
        sandbox = FakeSandbox(env=config.env)
        original = sandbox.copy_in

        def copy_in(src: Path, dest: str | None = None) -> None:
            files = [p for p in src.rglob("*") if p.is_file() and ".git" not in p.parts]
            self.trees[run_id] = {str(p.relative_to(src)): p.read_text() for p in files}
            original(src, dest)

        sandbox.copy_in = copy_in  # type: ignore[method-assign]
        if config.network:  # an engine sandbox can cut its network after setup (execute.Offline)
            sandbox.disconnect_network = lambda: self.disconnected.append(run_id)  # type: ignore[attr-defined]
        self.started[run_id], self.configs = sandbox, [*self.configs, config]
        return sandbox


class Concurrent(Factory):
    """A Factory that counts the sandboxes alive at once; the first `meet` started wait for each other."""

    def __init__(self, meet: int = 0) -> None:
        super().__init__()
        self.alive = self.peak = 0
        self._lock = threading.Lock()
        self._meet = threading.Barrier(meet, timeout=20) if meet > 1 else None
        self._to_meet = meet

    def __call__(self, config: SandboxConfig, run_id: str) -> FakeSandbox:
        sandbox = super().__call__(config, run_id)
        with self._lock:
            self.alive += 1
            self.peak = max(self.peak, self.alive)
            meets, self._to_meet = self._to_meet > 0, self._to_meet - 1
        close, gone = sandbox.close, threading.Event()

        def closing() -> None:
            with self._lock:
                if not gone.is_set():
                    gone.set()
                    self.alive -= 1
            close()

        sandbox.close = closing  # type: ignore[method-assign]
        if meets and self._meet is not None:
            self._meet.wait()  # sequential checks never get here twice: the barrier breaks and the test fails
        return sandbox


class Blocking(FakeSandbox):
    """A sandbox whose checks run until it is removed (as a removed container ends its exec)."""

    def __init__(self, running: threading.Semaphore) -> None:
        super().__init__()
        self.running, self.gone = running, threading.Event()

    def run_check(self, command: str, *, timeout: float) -> ExecResult:
        self.running.release()
        self.gone.wait(30)
        raise SandboxError("the container was removed")

    def close(self) -> None:
        self.gone.set()
        super().close()


def _verify(cands: list[Candidate], base: Path, factory: Any, repo: RepoConfig, **kw: Any) -> list[Candidate]:
    """The candidates as judged: copies with verify's verdicts (verify itself leaves them as they were)."""
    verdicts = verify(
        cands,
        checkout=base,
        factory=factory,
        sandbox_config=kw.pop("sandbox_config", SandboxConfig()),
        repo=repo,
        run_id="job",
        workdir=base.parent,
        cancel=kw.pop("cancel", threading.Event()),
        slots=kw.pop("slots", None),
    )
    return [c.judged(verdicts.get(c.index)) for c in cands]


def _three(where: Path) -> tuple[Path, list[Candidate]]:
    base = calc_base(where)
    return base, [candidate(base, 1, FIX, REPRO), candidate(base, 2, FIX, CLAIM), candidate(base, 3, REPRO)]


def _verdicts(cands: list[Candidate]) -> list[tuple[object, ...]]:
    """What verify decided for each candidate, without the outputs (their paths differ per sandbox)."""
    found = []
    for c in cands:
        rep = c.reproduction
        assert rep is not None and c.test is not None
        found.append(
            (rep.files, rep.fails_before, rep.passes_after, rep.detail, rep.command, c.cross, c.test["passed"])
        )
    return found


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return calc_base(tmp_path)


def test_valid_claimed_and_broken_reproductions_and_cross_validation(base: Path) -> None:
    good = candidate(base, 1, FIX, REPRO)
    claimed = candidate(base, 2, FIX, CLAIM)
    unfixed = candidate(base, 3, REPRO)
    factory = Factory()
    good, claimed, unfixed = _verify([good, claimed, unfixed], base, factory, RepoConfig(test=REPO_TEST))

    assert good.reproduction is not None and good.reproduction.valid and good.reproduction.detail == ""
    assert good.reproduction.command == "python3 -m unittest tests/test_add.py"
    assert "AssertionError: -1 != 5" in good.reproduction.before and "OK" in good.reproduction.after
    assert claimed.reproduction is not None and claimed.reproduction.fails_before is False
    assert not claimed.reproduction.valid and "passes on the base commit too" in claimed.reproduction.detail
    assert unfixed.reproduction is not None and unfixed.reproduction.fails_before is True
    assert unfixed.reproduction.passes_after is False and "fails with its own change" in unfixed.reproduction.detail
    assert (good.cross, claimed.cross, unfixed.cross) == ({}, {1: True}, {1: False})
    assert [c.test["passed"] for c in (good, claimed, unfixed) if c.test] == [True, True, False]

    # The base-commit sandbox held only the test file, the fix nowhere; every sandbox was a fresh one.
    before = factory.trees["job-verify-1-before"]
    assert before["tests/test_add.py"] == REPRO[1] and "return a - b" in before["calc/ops.py"]
    assert "return a + b" in factory.trees["job-verify-1-after"]["calc/ops.py"]
    assert sorted(factory.started) == sorted(
        [f"job-verify-{i}-{w}" for i in (1, 2, 3) for w in ("before", "after")]
        + ["job-verify-2-cross-0", "job-verify-3-cross-0"]
    )
    assert all(s.closed for s in factory.started.values())
    status = subprocess.run(["git", "-C", str(base), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""  # the worker's checkout is only read


def test_a_deleted_test_is_no_reproduction_and_no_test_command_means_no_check(base: Path) -> None:
    deleting = candidate(base, 1, FIX, ("tests/test_ops.py", None))
    no_command = candidate(base, 2, FIX, REPRO)
    factory = Factory()
    [deleting] = _verify([deleting], base, factory, RepoConfig(test=REPO_TEST))
    [no_command] = _verify([no_command], base, factory, RepoConfig(test="make check"))
    assert deleting.reproduction is not None and deleting.reproduction.files == []
    assert "no test file" in deleting.reproduction.detail and deleting.test is not None
    assert no_command.reproduction is not None and no_command.reproduction.files == ["tests/test_add.py"]
    assert no_command.reproduction.fails_before is None and "set `reproduce`" in no_command.reproduction.detail
    assert no_command.test is not None and no_command.test["command"] == "make check"


def test_a_change_that_does_not_apply_is_reported_not_raised(base: Path) -> None:
    bogus = Candidate(
        index=1,
        run_id="r",
        exit_status="Submitted",
        change=Change(
            "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1 @@\n-nope\n+x\n",
            ["calc/ops.py"],
            [],
        ),
    )
    skipped = Candidate(index=2, run_id="s", exit_status="LimitsExceeded")
    factory = Factory()
    bogus, skipped = _verify([bogus, skipped], base, factory, RepoConfig(test=REPO_TEST))
    assert bogus.reproduction is not None and "could not be applied to the base commit" in bogus.reproduction.detail
    assert bogus.test is not None and bogus.test["passed"] is False and bogus.test["returncode"] == -1
    assert skipped.reproduction is None and skipped.test is None and factory.started == {}


def test_a_sandbox_that_fails_is_a_detail_and_a_cancelled_verification_starts_nothing(base: Path) -> None:
    def broken(config: SandboxConfig, run_id: str) -> FakeSandbox:
        raise SandboxError("engine unavailable")

    failing = candidate(base, 1, FIX, REPRO)
    verdicts = verify(
        [failing],
        checkout=base,
        factory=broken,
        sandbox_config=SandboxConfig(),
        repo=RepoConfig(test=REPO_TEST),
        run_id="job",
        workdir=base.parent,
        cancel=threading.Event(),
    )
    failing = failing.judged(verdicts[1])
    assert failing.reproduction is not None and failing.reproduction.fails_before is None
    assert "engine unavailable" in failing.reproduction.detail and failing.test is not None
    assert failing.test["returncode"] == -1

    stopped = candidate(base, 2, FIX, REPRO)
    cancel, factory = threading.Event(), Factory()
    cancel.set()
    [stopped] = _verify([stopped], base, factory, RepoConfig(test=REPO_TEST), cancel=cancel)
    assert stopped.reproduction is not None and stopped.reproduction.detail == STOPPED and factory.started == {}


def test_setup_runs_on_the_base_commit_with_the_attempts_network_then_the_tree_is_laid_over(base: Path) -> None:
    # A repository whose setup needs the network gets it here as in its attempts; setup sees only the base
    # commit (never agent-written code), and a file the change deletes is gone when its tests run.
    deleting = candidate(base, 1, FIX, REPRO, ("tests/test_ops.py", None))
    factory = Factory()
    networked = SandboxConfig(network=True, setup_hosts=["pypi.org"])
    repo = RepoConfig(
        test="test ! -e tests/test_ops.py && grep -q 'a - b' setup-saw.txt", setup=["cp calc/ops.py setup-saw.txt"]
    )
    [deleting] = _verify([deleting], base, factory, repo, sandbox_config=networked)

    assert all(c.network and c.setup_hosts == ["pypi.org"] for c in factory.configs)
    assert sorted(factory.disconnected) == sorted(factory.started)  # cut after setup, in every sandbox
    assert deleting.test is not None and deleting.test["passed"], deleting.test
    assert "return a + b" in factory.trees["job-verify-1-after"]["calc/ops.py"]


def test_with_no_setup_each_sandbox_gets_its_tree_in_one_copy_and_a_deleted_file_is_absent(base: Path) -> None:
    deleting = candidate(base, 1, FIX, REPRO, ("tests/test_ops.py", None))
    copies: dict[str, list[Path]] = {}

    class Counting(Factory):
        def __call__(self, config: SandboxConfig, run_id: str) -> FakeSandbox:
            sandbox = super().__call__(config, run_id)
            inner = sandbox.copy_in

            def copy_in(src: Path, dest: str | None = None) -> None:
                copies.setdefault(run_id, []).append(src)
                inner(src, dest)

            sandbox.copy_in = copy_in  # type: ignore[method-assign]
            return sandbox

    repo = RepoConfig(test="test ! -e tests/test_ops.py && grep -q 'a + b' calc/ops.py")
    [deleting] = _verify([deleting], base, Counting(), repo)
    assert deleting.test is not None and deleting.test["passed"], deleting.test
    assert list(copies) == ["job-verify-1-after"]
    assert all(len(given) == 1 and given[0] != base for given in copies.values())  # the tree, not the base first


def test_candidates_are_checked_at_once_within_the_slots_with_the_same_verdicts(tmp_path: Path) -> None:
    one_base, one_by_one = _three(tmp_path / "one")
    sequential = Concurrent()
    one_by_one = _verify(one_by_one, one_base, sequential, RepoConfig(test=REPO_TEST), slots=SandboxSlots(1))
    assert sequential.peak == 1

    base, at_once = _three(tmp_path / "two")
    slots, factory = SandboxSlots(2), Concurrent(meet=2)
    at_once = _verify(at_once, base, factory, RepoConfig(test=REPO_TEST), slots=slots)

    assert factory.peak == 2  # two candidates' sandboxes at once, never more than the worker's slots
    assert len(factory.started) == 8 and all(s.closed for s in factory.started.values())
    assert _verdicts(at_once) == _verdicts(one_by_one)
    assert (at_once[1].cross, at_once[2].cross) == ({1: True}, {1: False})
    first, second = choose(one_by_one), choose(at_once)
    assert [c.index for c in second.ranking] == [c.index for c in first.ranking] == [1, 2, 3]
    assert second.reasons == first.reasons
    assert slots.try_take() and slots.try_take() and not slots.try_take()  # every slot given back


def test_a_check_that_crashes_ends_only_its_own_candidate(base: Path) -> None:
    good, claimed = candidate(base, 1, FIX, REPRO), candidate(base, 2, FIX, CLAIM)
    factory = Factory()

    def crashing(config: SandboxConfig, run_id: str) -> FakeSandbox:
        if run_id.startswith("job-verify-1-"):
            raise RuntimeError("a bug")
        return factory(config, run_id)

    good, claimed = _verify([good, claimed], base, crashing, RepoConfig(test=REPO_TEST))
    assert good.reproduction is not None and not good.reproduction.valid
    assert good.reproduction.detail == "its verification crashed: RuntimeError: a bug"
    assert good.test is not None and good.test["returncode"] == -1
    assert claimed.reproduction is not None and claimed.reproduction.fails_before is False
    assert claimed.test is not None and claimed.test["passed"] and claimed.cross == {}
    assert sorted(factory.started) == ["job-verify-2-after", "job-verify-2-before"]


def test_a_stop_ends_the_checks_running_and_those_waiting_for_a_slot(tmp_path: Path) -> None:
    base, cands = _three(tmp_path)
    running, started, cancel, slots = threading.Semaphore(0), [], threading.Event(), SandboxSlots(2)

    def blocking(config: SandboxConfig, run_id: str) -> Blocking:
        started.append(sandbox := Blocking(running))
        return sandbox

    judged: list[Candidate] = []
    job = threading.Thread(
        target=lambda: judged.extend(
            _verify(cands, base, blocking, RepoConfig(test=REPO_TEST), cancel=cancel, slots=slots)
        )
    )
    job.start()
    assert running.acquire(timeout=30) and running.acquire(timeout=30)  # two checks running, the third waits
    cancel.set()
    job.join(30)
    assert not job.is_alive()
    assert len(started) == 2 and all(s.closed for s in started)  # nothing started after the stop
    cands = judged
    assert [c.reproduction.detail if c.reproduction else None for c in cands] == [STOPPED] * 3
    assert slots.try_take() and slots.try_take()


def test_the_tests_a_change_drops_are_found_in_the_workers_own_trees(base: Path) -> None:
    # The real 1.5B's calc attempt: its reproduction was written over tests/test_ops.py, and MulTest was gone.
    rewriting = candidate(base, 1, FIX, ("tests/test_ops.py", REPRO[1]))
    keeping = candidate(base, 2, FIX, REPRO)
    rewriting, keeping = _verify([rewriting, keeping], base, Factory(), RepoConfig(test=REPO_TEST))
    assert rewriting.dropped == DroppedTests(tests=["tests/test_ops.py::MulTest::test_mul"])
    assert keeping.dropped == DroppedTests()
    assert rewriting.reproduction is not None and rewriting.reproduction.valid  # as good by every other count
    assert choose([rewriting, keeping]).chosen is keeping


def test_a_missing_tool_is_no_fails_before_and_no_failing_test(base: Path) -> None:
    # exit 127 in the reproduction or the test command: the image lacks the tool, no test ran.
    c = candidate(base, 1, FIX, REPRO)
    missing = "no-such-tool-mini-fix"
    [c] = _verify([c], base, Factory(), RepoConfig(test=f"{missing} test", reproduce=f"{missing} run"))
    assert c.reproduction is not None and c.reproduction.fails_before is None
    assert not c.reproduction.valid and f"`{missing}` is not found in the sandbox image" in c.reproduction.detail
    assert c.test is not None and c.test["passed"] is False and c.test["missing_tool"] == missing


def test_a_missing_module_on_the_base_commit_is_could_not_run_never_fails_before(base: Path) -> None:
    # The issue's `No module named 'semver'`: the sandbox lacks the package, so nothing ran before the fix.
    needs = ("tests/test_add.py", "import semver_not_installed_mini_fix\n" + REPRO[1])
    [c] = _verify([candidate(base, 1, FIX, needs)], base, Factory(), RepoConfig(test=REPO_TEST))
    rep = c.reproduction
    assert rep is not None and rep.fails_before is None and not rep.valid
    assert rep.detail.startswith("could not run the tests on the base commit: the Python module")
    assert "semver_not_installed_mini_fix" in rep.detail and rep.before_verdict.startswith("could not run the tests")
    # The whole suite: another test ran and passed, so the file that could not import is a failure there.
    assert c.test is not None and c.test["verdict"] == "failed" and c.test["passed"] is False


def test_a_test_importing_a_module_its_fix_adds_fails_before_for_real(base: Path) -> None:
    newmod = ("calc/newmod.py", "def sub(a, b):\n    return a - b\n")
    body = "class SubTest(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(sub(3, 2), 1)\n"
    test = ("tests/test_sub.py", f"import unittest\n\nfrom calc.newmod import sub\n\n\n{body}")
    [c] = _verify([candidate(base, 1, newmod, test)], base, Factory(), RepoConfig(test=REPO_TEST))
    assert c.reproduction is not None and c.reproduction.valid, c.reproduction
    assert "No module named 'calc.newmod'" in c.reproduction.before


def test_zero_tests_run_is_no_pass_and_ranks_behind_a_pass(base: Path) -> None:
    # A pytest project inferred as `unittest discover`: 0 tests ran, exit 0. It is "no tests ran", never a pass.
    plain = ("tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    no_tests = candidate(base, 1, FIX, plain)
    no_tests_test = "python3 -m unittest discover -s tests -t . -p 'test_add.py'"
    [judged] = _verify([no_tests], base, Factory(), RepoConfig(test=no_tests_test))
    assert judged.test is not None and judged.test["returncode"] == 0
    assert (judged.test["passed"], judged.test["verdict"]) == (False, "no tests ran")
    assert judged.reproduction is not None and judged.reproduction.fails_before is None
    assert "ran no test on the base commit" in judged.reproduction.detail
    passing = candidate(base, 2, FIX, REPRO)
    [passing] = _verify([passing], base, Factory(), RepoConfig(test=no_tests_test.replace("test_add", "test_ops")))
    choice = choose([judged, passing])
    assert choice.chosen is passing
    assert "ran no test" in choice.reasons[1] and "and pass on attempt 2" in choice.reasons[1]


def test_a_summary_that_counts_failures_fails_even_with_exit_0(base: Path) -> None:
    # big.js's runner: "47455 of 47456 tests passed", exit 0.
    c = candidate(base, 1, FIX, REPRO)
    [c] = _verify([c], base, Factory(), RepoConfig(test="echo ' In total, 47455 of 47456 tests passed in 1 secs.'"))
    assert c.test is not None and c.test["returncode"] == 0
    assert (c.test["passed"], c.test["verdict"]) == (False, "failed")
    assert "47455 of 47456" in c.test["summary"]


def test_a_go_reproduction_runs_only_the_tests_its_change_adds(base: Path) -> None:
    go_test = ("calc/add_test.go", 'package calc\n\nimport "testing"\n\nfunc TestAddNegative(t *testing.T) {}\n')
    c = candidate(base, 1, FIX, go_test)
    template = "echo go test {packages} -run {pattern}; exit 1"  # a stand-in for go: the host has none
    [c] = _verify([c], base, Factory(), RepoConfig(test="true", reproduce=template, test_paths=["*_test.go"]))
    assert c.reproduction is not None
    assert c.reproduction.command == "echo go test ./calc -run '^(TestAddNegative)$'; exit 1"


def test_a_change_that_imports_a_missing_package_fails_its_tests_and_ranks_behind(base: Path) -> None:
    # The scripted "broken" attempt: its fix also adds `import no_such_module`; every test then fails to import.
    ops = FIX[1].replace('"""Arithmetic on two numbers."""', '"""Arithmetic on two numbers."""\nimport no_such_module')
    broken = candidate(base, 1, (FIX[0], ops), REPRO)
    fixed = candidate(base, 2, FIX, REPRO)
    broken, fixed = _verify([broken, fixed], base, Factory(), RepoConfig(test=REPO_TEST))
    assert broken.test is not None and broken.test["verdict"] == "failed"
    assert "its change uses `no_such_module`" in broken.test["summary"]
    assert broken.reproduction is not None and broken.reproduction.passes_after is False
    assert choose([broken, fixed]).chosen is fixed
