"""`mini-fix eval mine GIT_DIR`: tasks from a repository's history, each checked by running its tests.

The tests are found as the App finds them (`--runner auto`, the default): `bot/repo_config/infer.py` reads the
candidate's checkout. A Python project's tests are listed and run one id each (pytest or unittest); in Go, Rust,
JavaScript and Java each test the fix adds (or each test file it changes, where the runner takes no test name)
is one id: the reproduction command of `bot/repo_config/runners.py`, filled by the judge's `reproduce.command`
from the host's own diff. The problem statement is the linked issue's text; with none, the candidate is skipped
("no linked issue"), or with `statement_from_tests` written from the failing test's name and its output before
the fix only (never from the commit message or the diff, which name the fix).
"""

from __future__ import annotations

import json
import posixpath
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.eval.history import Candidate, linked_issue, load_issues, scan
from bot.eval.tasks import EvalTask
from bot.pipeline.attempts.execute import TEST_TIMEOUT
from bot.pipeline.errors import SetupFailed
from bot.pipeline.git.gitops import GitError
from bot.pipeline.git.hostgit import apply_patch, base_checkout
from bot.pipeline.judge import reproduce
from bot.pipeline.judge.testbed import SandboxFactory, prepared, run_tests, test_command
from bot.repo_config import runners
from bot.repo_config.infer import resolve
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
# Runs each id (a reproduction command the host built) in turn; the ids are shell-quoted by `test_command`.
EACH_COMMAND = 'for t in {tests}; do sh -c "$t" || exit 1; done'
STATEMENT_LINES = 30  # of the failing test's output, in a statement written from the tests
STATEMENT_CHARS = 4000
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
    runner: str = "auto"
    test_cmd: str | None = None
    list_cmd: str | None = None
    setup: list[str] = field(default_factory=list)
    setup_network: bool = False
    image: str | None = None
    issues: Path | None = None
    statement_from_tests: bool = False


@dataclass
class Mined:
    """What mining found: the kept tasks, each dropped candidate with its reason, and the commits passed over."""

    tasks: list[EvalTask] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def reasons(self) -> dict[str, int]:
        """How many candidates were skipped for each reason."""
        counts: dict[str, int] = {}
        for drop in self.dropped:
            counts[drop["kind"]] = counts.get(drop["kind"], 0) + 1
        return counts

    def summary(self) -> dict[str, Any]:
        """The mining report."""
        return {
            "candidates": len(self.tasks) + len(self.dropped),
            "kept": len(self.tasks),
            "tasks": [t.instance_id for t in self.tasks],
            "dropped": self.dropped,
            "skipped_by_reason": self.reasons(),
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
            mined.dropped.append(
                {"commit": candidate.sha, "subject": candidate.subject, "kind": drop.kind, "reason": str(drop)}
            )
            say(f"[{number}/{len(candidates)}] {candidate.sha[:10]} dropped: {drop}")
            continue
        mined.tasks.append(task)
        say(
            f"[{number}/{len(candidates)}] {candidate.sha[:10]} kept: {len(task.FAIL_TO_PASS)} fail-to-pass, "
            f"{len(task.PASS_TO_PASS)} pass-to-pass"
        )
    if reasons := mined.reasons():
        say("mine: skipped " + ", ".join(f"{count} ({reason})" for reason, count in sorted(reasons.items())))
    return mined


class _Drop(Exception):
    """This candidate is not a valid task; `kind` is the reason counted, the message the details."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


@dataclass(frozen=True)
class _Tests:
    """How a candidate's tests run: the command for ids, the ids (or the command listing them), what each id
    names (test, file) where the host built it, and the repository's test and reproduce commands."""

    test_cmd: str
    tests: str | list[str]
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)
    test: str | None = None
    reproduce: str | None = None


def _verify(
    c: Candidate, req: MineRequest, source: str, issues: dict[int, str], factory: SandboxFactory, config: SandboxConfig
) -> EvalTask:
    linked = linked_issue(f"{c.message}\n\n{c.refs}", issues)
    if linked is None and not req.statement_from_tests:
        raise _Drop("no linked issue")
    repo_config = RepoConfig(setup=req.setup, setup_network=req.setup_network, image=req.image)
    started = time.monotonic()
    with _checkout(source, c.sha, "", "the commit") as checkout:
        plan = _plan(req, c, checkout)
        after, _ = _results(checkout, c.sha, plan.test_cmd, plan.tests, factory, config, repo_config)
    passing = [t for t, ok in after.items() if ok]
    if not passing:
        raise _Drop("no test passes at the commit" if after else "no tests found at the commit")
    # A new test may hang before its fix (a regression test for a loop): give each run a few times what the
    # whole passing suite took, not the grading default.
    timeout = max(MIN_TEST_TIMEOUT, 3 * (time.monotonic() - started))
    with _checkout(source, c.parent, c.test_patch, "the parent") as checkout:
        before, failed = _results(
            checkout, c.parent, plan.test_cmd, passing, factory, config, repo_config, timeout, capture=linked is None
        )
    fail_to_pass = [t for t in passing if not before.get(t, False)]
    if not fail_to_pass:
        raise _Drop("nothing fails at the parent", "every test passes there with the new tests: nothing to fix")
    if linked is None:
        statement, issue = _from_tests(fail_to_pass[0], failed, plan, c), None
    else:
        statement, issue = linked
    name = req.repo or f"local/{req.git_dir.resolve().name}"
    fields: dict[str, Any] = {"test": plan.test, "reproduce": plan.reproduce} if plan.test else {}
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
            "test_cmd": plan.test_cmd,
            "setup": req.setup,
            "setup_network": req.setup_network,
            "image": req.image,
            "commit": c.sha,
            "issue": issue,
            **fields,
        }
    )


def _plan(req: MineRequest, c: Candidate, checkout: Path) -> _Tests:
    """The candidate's tests as the App infers them from the commit's checkout (`--runner auto`), else as given."""
    if req.runner in RUNNERS or req.test_cmd:
        test_cmd, list_cmd = RUNNERS.get(req.runner, RUNNERS["unittest"])
        return _Tests(req.test_cmd or test_cmd, req.list_cmd or list_cmd)
    repo, inferred = resolve(RepoConfig(), checkout)
    template, _ = reproduce.template(repo)
    kind = runners.kind(template) if template else None
    if inferred.language in ("python", "unknown") or template is None or kind == "python":
        runner = "pytest" if inferred.reproduce == runners.PYTEST else "unittest"
        test_cmd, list_cmd = RUNNERS[runner]
        return _Tests(test_cmd, req.list_cmd or list_cmd, {}, repo.test, repo.reproduce)
    files = [f for f in c.test_files if reproduce.matches(f, repo.test_paths) and _regular(checkout / f)]
    files = reproduce.runnable(template, files)
    if not files:
        raise _Drop("no runnable test file", f"none of {', '.join(c.test_files)[:300]} is a {inferred.language} test")
    labels: dict[str, tuple[str, str]] = {}
    named = "{names}" in template or "{pattern}" in template
    for path in files:
        names = reproduce.added_tests(c.test_patch, [path]) if named else []
        for test in names or [""]:
            command = reproduce.command(template, [path], [test] if test else [])
            labels.setdefault(command, (test or posixpath.basename(path), path))
    return _Tests(EACH_COMMAND, list(labels), labels, repo.test, repo.reproduce)


def _regular(path: Path) -> bool:
    return not path.is_symlink() and path.is_file()


def _from_tests(test_id: str, failed: dict[str, str], plan: _Tests, c: Candidate) -> str:
    """A statement from the failing test alone: its name, its file and the last lines of its output before the
    fix (never the commit message or the fix's diff, which name the fix)."""
    name, path = plan.labels.get(test_id) or _python_label(test_id, c.test_files)
    lines = failed.get(test_id, "").rstrip().splitlines()[-STATEMENT_LINES:]
    output = "\n".join(lines)[-STATEMENT_CHARS:]
    return f"The test {name} in {path} fails:\n\n```\n{output}\n```"


def _python_label(test_id: str, files: tuple[str, ...]) -> tuple[str, str]:
    """(test name, file) of a pytest id (`path::name`) or a unittest id (`package.module.Class.test`)."""
    path, sep, name = test_id.partition("::")
    if sep:
        return name, path
    for file in files:
        module = file.removesuffix(".py").replace("/", ".")
        if file.endswith(".py") and test_id.startswith(module + "."):
            return test_id.removeprefix(module + "."), file
    return test_id, "the repository's tests"


@contextmanager
def _checkout(source: str, commit: str, test_patch: str, where: str) -> Iterator[Path]:
    """A checkout of `commit` with `test_patch` applied, in a scratch directory."""
    with tempfile.TemporaryDirectory(prefix="mini-fix-mine-") as tmp:
        checkout = Path(tmp) / "repo"
        try:
            base_checkout(source, commit, checkout)
            apply_patch(checkout, test_patch, "the test patch")
        except GitError as exc:
            raise _Drop("git failed", f"at {where}: {exc}") from exc
        yield checkout


def _results(
    checkout: Path,
    commit: str,
    test_cmd: str,
    tests: str | list[str],
    factory: SandboxFactory,
    config: SandboxConfig,
    repo_config: RepoConfig,
    timeout: float = TEST_TIMEOUT,
    *,
    capture: bool = False,
) -> tuple[dict[str, bool], dict[str, str]]:
    """Each test's verdict in `checkout`; `tests` is the ids or the command that lists them. With `capture`, the
    output of the first failing test run alone."""
    try:
        with prepared(factory, config, f"mine-{commit[:10]}", checkout, repo_config) as ready:
            box = ready.sandbox
            ids = _list_tests(box.execute(tests, timeout=600).output) if isinstance(tests, str) else tests
            results = run_tests(box, test_cmd, ids, timeout)
            failing = [t for t in ids if not results.get(t, True)][:1] if capture else []
            outputs = {t: box.run_check(test_command(test_cmd, [t]), timeout=timeout).output for t in failing}
            return results, outputs
    except (SetupFailed, SandboxError) as exc:
        raise _Drop("sandbox or setup failed", f"at {commit[:10]}: {exc}") from exc


def _list_tests(output: str) -> list[str]:
    """Test ids from a listing command's output (the sandbox's word: only plain ids are taken)."""
    ids = [line.strip() for line in output.splitlines() if _TEST_ID.match(line.strip())]
    ids = [i for i in ids if not i.startswith("unittest.loader.") and (".py" not in i or "::" in i)]
    return list(dict.fromkeys(ids))[:MAX_TESTS]


def write_summary(path: Path, mined: Mined) -> None:
    """The mining report as JSON."""
    path.write_text(json.dumps(mined.summary(), indent=2) + "\n", encoding="utf-8")
