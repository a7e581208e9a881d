"""`mini-fix eval mine GIT_DIR`: tasks from a repository's history, each checked by running its tests."""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.eval.history import Candidate, load_issues, problem_statement, scan
from bot.eval.hostgit import GitFailed, apply_patch, base_checkout
from bot.eval.tasks import EvalTask
from bot.pipeline.attempts.execute import TEST_TIMEOUT
from bot.pipeline.errors import SetupFailed
from bot.pipeline.judge.testbed import SandboxFactory, prepared, run_tests
from bot.repo_config.schema import RepoConfig
from sandbox.base import SandboxConfig, SandboxError

UNITTEST_LIST = (
    "python3 -c 'import unittest\n"
    "def walk(s):\n"
    "    for t in s:\n"
    "        yield from walk(t) if isinstance(t, unittest.TestSuite) else [t.id()]\n"
    'print(*walk(unittest.defaultTestLoader.discover(".")), sep="\\n")\''
)
RUNNERS = {
    "unittest": ("python3 -m unittest {tests}", UNITTEST_LIST),
    "pytest": (
        "python3 -m pytest -q -p no:cacheprovider {tests}",
        "python3 -m pytest --collect-only -q -p no:cacheprovider",
    ),
}
_TEST_ID = re.compile(r"^[\w./:\[\]()@,=+-]{1,300}$")
MAX_TESTS = 2000
MIN_TEST_TIMEOUT = 30.0
Say = Callable[[str], None]


@dataclass
class MineRequest:
    """The arguments of `mini-fix eval mine`."""

    git_dir: Path
    output: Path
    repo: str = ""
    rev: str = "HEAD"
    max_commits: int = 200
    runner: str = "unittest"
    test_cmd: str | None = None
    list_cmd: str | None = None
    setup: list[str] = field(default_factory=list)
    setup_network: bool = False
    image: str | None = None
    issues: Path | None = None


@dataclass
class Mined:
    """What mining found: the kept tasks, each dropped candidate with its reason, and the commits passed over."""

    tasks: list[EvalTask] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The mining report."""
        return {
            "candidates": len(self.tasks) + len(self.dropped),
            "kept": len(self.tasks),
            "tasks": [t.instance_id for t in self.tasks],
            "dropped": self.dropped,
            "not_candidates": self.skipped,
        }


def mine(request: MineRequest, factory: SandboxFactory, config: SandboxConfig, say: Say) -> Mined:
    """Scan the history, then keep each candidate whose new tests fail at the parent and pass at the commit."""
    source = str(request.git_dir.resolve())
    candidates, skipped = scan(request.git_dir, request.rev, request.max_commits)
    say(f"mine: {len(candidates)} candidate commit(s) in the last {request.max_commits} of {request.rev}")
    issues = load_issues(request.issues)
    mined = Mined(skipped=skipped)
    for number, candidate in enumerate(candidates, 1):
        try:
            task = _verify(candidate, request, source, issues, factory, config)
        except _Drop as drop:
            mined.dropped.append({"commit": candidate.sha, "subject": candidate.subject, "reason": str(drop)})
            say(f"[{number}/{len(candidates)}] {candidate.sha[:10]} dropped: {drop}")
            continue
        mined.tasks.append(task)
        say(
            f"[{number}/{len(candidates)}] {candidate.sha[:10]} kept: {len(task.FAIL_TO_PASS)} fail-to-pass, "
            f"{len(task.PASS_TO_PASS)} pass-to-pass"
        )
    return mined


class _Drop(Exception):
    """This candidate is not a valid task; the message says why."""


def _verify(
    c: Candidate, req: MineRequest, source: str, issues: dict[int, str], factory: SandboxFactory, config: SandboxConfig
) -> EvalTask:
    test_cmd, list_cmd = _commands(req)
    repo_config = RepoConfig(setup=req.setup, setup_network=req.setup_network, image=req.image)
    started = time.monotonic()
    after = _results(source, c.sha, "", test_cmd, list_cmd, factory, config, repo_config)
    passing = [t for t, ok in after.items() if ok]
    if not passing:
        raise _Drop("no test passes at the commit" if after else "no tests found at the commit")
    # A new test may hang before its fix (a regression test for a loop): give each run a few times what the
    # whole passing suite took, not the grading default.
    timeout = max(MIN_TEST_TIMEOUT, 3 * (time.monotonic() - started))
    before = _results(source, c.parent, c.test_patch, test_cmd, passing, factory, config, repo_config, timeout)
    fail_to_pass = [t for t in passing if not before.get(t, False)]
    if not fail_to_pass:
        raise _Drop("every test passes at the parent with the new tests: nothing for a fix to do")
    statement, issue = problem_statement(c.message, issues)
    name = req.repo or f"local/{req.git_dir.resolve().name}"
    return EvalTask.model_validate(
        {
            "instance_id": f"{name.replace('/', '__')}-{c.sha[:10]}",
            "repo": name,
            "base_commit": c.parent,
            "problem_statement": statement,
            "test_patch": c.test_patch,
            "patch": c.patch,
            "FAIL_TO_PASS": fail_to_pass,
            "PASS_TO_PASS": [t for t in passing if before.get(t, False)],
            "git": source,
            "test_cmd": test_cmd,
            "setup": req.setup,
            "setup_network": req.setup_network,
            "image": req.image,
            "commit": c.sha,
            "issue": issue,
        }
    )


def _results(
    source: str,
    commit: str,
    test_patch: str,
    test_cmd: str,
    tests: str | list[str],
    factory: SandboxFactory,
    config: SandboxConfig,
    repo_config: RepoConfig,
    timeout: float = TEST_TIMEOUT,
) -> dict[str, bool]:
    """Each test's verdict at `commit` (+ `test_patch`); `tests` is the ids or the command that lists them."""
    where = "the commit" if not test_patch else "the parent"
    with tempfile.TemporaryDirectory(prefix="mini-fix-mine-") as tmp:
        checkout = Path(tmp) / "repo"
        try:
            base_checkout(source, commit, checkout)
            apply_patch(checkout, test_patch, "the test patch")
        except GitFailed as exc:
            raise _Drop(f"at {where}: {exc}") from exc
        try:
            with prepared(factory, config, f"mine-{commit[:10]}", checkout, repo_config) as ready:
                box = ready.sandbox
                ids = _list_tests(box.execute(tests, timeout=600).output) if isinstance(tests, str) else tests
                return run_tests(box, test_cmd, ids, timeout)
        except (SetupFailed, SandboxError) as exc:
            raise _Drop(f"at {where}: {exc}") from exc


def _list_tests(output: str) -> list[str]:
    """Test ids from a listing command's output (the sandbox's word: only plain ids are taken)."""
    ids = [line.strip() for line in output.splitlines() if _TEST_ID.match(line.strip())]
    ids = [i for i in ids if not i.startswith("unittest.loader.") and (".py" not in i or "::" in i)]
    return list(dict.fromkeys(ids))[:MAX_TESTS]


def _commands(req: MineRequest) -> tuple[str, str]:
    test_cmd, list_cmd = RUNNERS[req.runner]
    return req.test_cmd or test_cmd, req.list_cmd or list_cmd


def write_summary(path: Path, mined: Mined) -> None:
    """The mining report as JSON."""
    path.write_text(json.dumps(mined.summary(), indent=2) + "\n", encoding="utf-8")
