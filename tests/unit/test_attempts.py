"""Several attempts at one job: parallel sandboxes, the App's own tests choose, the PR and the comments show it.

The pipeline runs against the fake GitHub (real HTTP, real git) with host-side sandboxes; each attempt gets its
own scripted model, picked by the sampling temperature the pipeline gave it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from bot.agent.config import ModelConfig
from bot.github.app import GitHubApp
from bot.jobs import CancelSignal, JobKind, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.pipeline.capacity import SandboxSlots
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.runconfig import sandbox_limit
from bot.queue.dispatch import build_queue
from bot.settings import Settings
from bot.web.app import create_app
from sandbox.base import Sandbox, SandboxConfig
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash
from tests.support.unpaced import unpaced
from tests.unit import test_pipeline
from tests.unit.test_pipeline import REPO, SUBMIT, World

github = test_pipeline.github  # the fake GitHub fixture, shared with the pipeline tests

CONFIG = ".github/mini-fix.yml"
TESTS = (
    "import unittest\nfrom calc import add\n\n\nclass Base(unittest.TestCase):\n"
    "    def test_zero(self):\n        self.assertEqual(add(2, 0), 2)\n"
)
REPO_CONFIG = (
    "attempts: 3\ntest: python3 -m unittest discover -s tests -t . -q\nreproduce: python3 -m unittest {files}\n"
)
ADD_TEST = (
    "import unittest\nfrom calc import add\n\n\nclass Issue(unittest.TestCase):\n"
    "    def test_two_and_three(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
CLAIM_TEST = (  # claims to reproduce the issue, but passes on the base commit too
    "import unittest\nfrom calc import add\n\n\nclass Claim(unittest.TestCase):\n"
    "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n"
)
BIG_FIX = "".join(f"def helper_{n}(x):\n    return x + {n}\n\n\n" for n in range(15)) + (
    "def add(a, b):\n    return a + b\n"
)


def write(path: str, text: str) -> str:
    """A reply writing `text` to `path` (made from printf so the scripted command stays one line)."""
    escaped = text.replace("\\", "\\\\").replace("'", "'\\''").replace("\n", "\\n").replace("%", "%%")
    return bash(f"mkdir -p $(dirname {path}) && printf '{escaped}' > {path}")


VIEWER: dict[str, Any] = {"public_url": "https://fix.example.com", "webhook_secret": SecretStr("viewer-secret-8a1b")}
BREAKS = [bash("sed -i 's/a - b/a * b/' calc.py"), bash(SUBMIT)]  # add(2, 0) is 0 now: the repo's test fails
LARGE = [write("calc.py", BIG_FIX), write("tests/test_claim.py", CLAIM_TEST), bash(SUBMIT)]
SMALL = [bash("sed -i 's/a - b/a + b/' calc.py"), write("tests/test_add.py", ADD_TEST), bash(SUBMIT)]
# A valid reproduction and a smaller change than SMALL's, but written over tests/test_base.py: Base.test_zero is gone.
DROPS = [bash("sed -i 's/a - b/a + b/' calc.py"), write("tests/test_base.py", ADD_TEST), bash(SUBMIT)]
ZERO = "tests/test_base.py::Base::test_zero"


class Attempts(World):
    """A World whose model factory hands each attempt its own script, chosen by the attempt's temperature."""

    def __init__(self, github: FakeGitHub, tmp_path: Path, scripts: dict[float, list[Any]], **settings: Any) -> None:
        super().__init__(github, tmp_path, [])
        self.settings = self.settings.model_copy(update=settings)
        self.scripts = scripts
        self.models: list[tuple[float, ScriptedModel]] = []
        self.slots: SandboxSlots | None = None
        self.saved: dict[str, str] = {}  # the shared trajectory store: run id -> its last saved text
        self.open_now = self.most_open = 0
        self.count_verify = False  # count verify's sandboxes too in open_now/most_open
        self._lock = threading.Lock()

    def model_for(self, config: ModelConfig) -> ScriptedModel:
        temperature = config.model_kwargs["temperature"]
        model = ScriptedModel(self.scripts[temperature])
        with self._lock:
            self.models.append((temperature, model))
        return model

    def sandbox(self, config: SandboxConfig, run_id: str) -> Sandbox:
        agents = self.count_verify or "-verify-" not in run_id  # verify's are named `<run id>-verify-...`
        box = CountedSandbox(self, counted=agents)
        with self._lock:
            self.sandboxes.append(box)
            self.open_now += agents
            self.most_open = max(self.most_open, self.open_now)
        return box

    def deps(self) -> PipelineDeps:
        return PipelineDeps(
            self.settings,
            GitHubApp(self.settings, pacers=unpaced()).for_repo,
            self.sandbox,
            self.model_for,
            self.base_config(),
            workdir=self.workdir,
            sandbox_slots=self.slots,
            save_trajectory=self.saved.__setitem__,
        )

    def base_config(self) -> Any:
        return test_pipeline.load_config()

    def pr_comments(self) -> list[str]:
        return [c["body"] for c in self.github.comments_on(REPO, self.github.pulls[0]["number"])]


class CountedSandbox(FakeSandbox):
    """A host-side sandbox that tells its world when it is closed (how many are alive at once)."""

    def __init__(self, world: Attempts, *, counted: bool) -> None:
        super().__init__()
        self.world, self.counted = world, counted

    def close(self) -> None:
        if not self.closed and self.counted:
            with self.world._lock:
                self.world.open_now -= 1
        super().close()


def viewer_status(world: Attempts, run_id: str, row: str) -> int:
    """The viewer's answer to the signed link in `row` (the trajectory page of one attempt)."""
    path = row.split("(https://fix.example.com", 1)[1].split(")", 1)[0]
    assert path.startswith(f"/runs/{run_id}?")
    settings = world.settings
    ledger = SqliteLedger(settings.data_dir / "viewer.db")
    queue = build_queue(settings)
    try:
        with TestClient(create_app(settings, ledger=ledger, queue=queue)) as client:
            return client.get(path).status_code
    finally:
        queue.close()
        ledger.close()


def table_rows(markdown: str) -> dict[int, str]:
    """The attempts table's rows by attempt number (rows whose first cell is a number)."""
    rows = {}
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and cells[0].isdigit():
            rows[int(cells[0])] = line
    return rows


@pytest.fixture
def calc(github: FakeGitHub) -> FakeGitHub:
    commit_files(github, REPO, {"tests/__init__.py": "", "tests/test_base.py": TESTS, CONFIG: REPO_CONFIG})
    return github


def test_the_app_chooses_the_attempt_its_own_tests_favour(calc: FakeGitHub, tmp_path: Path) -> None:
    world = Attempts(calc, tmp_path, {0.0: BREAKS, 0.7: LARGE, 1.0: SMALL}, **VIEWER)
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert sorted(t for t, _ in world.models) == [0.0, 0.7, 1.0]  # each attempt sampled at its own temperature
    run_id = outcome.run_id.rsplit("-", 1)[0]
    assert outcome.run_id == f"{run_id}-3"
    head = calc.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "return a + b" in calc.show(REPO, head, "calc.py")
    assert "helper_1" not in calc.show(REPO, head, "calc.py") and "Issue" in calc.show(REPO, head, "tests/test_add.py")
    [pr] = calc.pulls
    assert "(profile `text`)" in pr["body"]
    rows = table_rows(pr["body"])
    assert set(rows) == {1, 2, 3} and [k for k in rows if "**yes**" in rows[k]] == [3]
    assert ":x: failed (exit 1)" in rows[1] and "tests fail on it" in rows[1]
    assert "passes before the fix too (no credit)" in rows[2] and "larger change" in rows[2]
    assert "fails before the fix, passes after" in rows[3]
    for k in (1, 2, 3):  # each row links to its own attempt's trajectory, signed as run links are
        assert f"(https://fix.example.com/runs/{run_id}-{k}?exp=" in rows[k]
    assert viewer_status(world, f"{run_id}-2", rows[2]) == 200
    for k in (1, 2, 3):  # every attempt's trajectory, saved under its own run id, with what the App found
        data = json.loads((world.settings.data_dir / "runs" / f"{run_id}-{k}" / "trajectory.json").read_text())
        assert data["mini_fix"]["attempt"] == k and data["mini_fix"]["chosen"] == (k == 3)
        assert data["mini_fix"]["profile"] == "text"  # which agent profile ran
        assert json.loads(world.saved[f"{run_id}-{k}"]) == data  # mirrored to the store, verdicts included
    verdicts = {
        k: json.loads((world.settings.data_dir / "runs" / f"{run_id}-{k}" / "trajectory.json").read_text())["mini_fix"]
        for k in (1, 2, 3)
    }
    assert verdicts[1]["test"]["passed"] is False and verdicts[3]["test"]["passed"] is True
    # The App ran the claimed reproductions itself: attempt 2's passes on the base commit, so it earns nothing.
    assert verdicts[2]["reproduction"]["fails_before"] is False and verdicts[2]["reproduction"]["valid"] is False
    assert verdicts[3]["reproduction"]["valid"] is True
    assert "Reproduction test" in pr["body"] and "tests/test_add.py" in pr["body"]
    assert "passed" in pr["body"]  # the chosen attempt's test verdict fills the Tests section
    assert "mini-fix trajectory" in world.pr_comments()[0]
    assert all(box.closed for box in world.sandboxes) and list(world.workdir.iterdir()) == []
    assert len({id(box) for box in world.sandboxes[:3]}) == 3


def test_an_attempt_that_drops_existing_tests_loses_to_one_that_keeps_them(calc: FakeGitHub, tmp_path: Path) -> None:
    commit_files(calc, REPO, {CONFIG: REPO_CONFIG.replace("attempts: 3", "attempts: 2")})
    world = Attempts(calc, tmp_path, {0.0: DROPS, 0.7: SMALL})
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    head = calc.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "test_zero" in calc.show(REPO, head, "tests/test_base.py")
    [pr] = calc.pulls
    rows = table_rows(pr["body"])
    assert "**yes**" in rows[2] and ":warning:" not in rows[2]
    assert f":warning: drops existing tests: {ZERO}" in rows[1] and "attempt 2 drops none" in rows[1]
    assert "[!WARNING]" not in pr["body"]
    run_id = outcome.run_id.rsplit("-", 1)[0]
    saved = json.loads((world.settings.data_dir / "runs" / f"{run_id}-1" / "trajectory.json").read_text())
    assert saved["mini_fix"]["dropped_tests"]["tests"] == [ZERO]


# xmlparser writes its tests as macro invocations (`test!(dtd_03, …)`); a test file of that shape beside calc's.
LEXER = (
    "use xmlparser::Token;\n\nmacro_rules! test {\n    ($name:ident, $text:expr) => {\n        #[test]\n"
    "        fn $name() {\n            assert!(xmlparser::Tokenizer::from($text).next().is_some());\n        }\n"
    '    };\n}\n\ntest!(dtd_01, "<!DOCTYPE a>");\ntest!(dtd_03, "<!DOCTYPE c []>");\n'
    'tests! { "<!DOCTYPE d>", "<!DOCTYPE e>" }\n'
)
FIX_AND_TEST = [bash("sed -i 's/a - b/a + b/' calc.py"), write("tests/test_add.py", ADD_TEST)]
# The same fix and reproduction each time: one deletes a named macro test (10 lines), one an invocation of a shape
# the App cannot name (10 lines), one adds a macro test to the existing file instead (11 lines, the largest).
DELETES_MACRO = [*FIX_AND_TEST, bash("sed -i '/dtd_03/d' tests/lexer.rs"), bash(SUBMIT)]
DELETES_UNKNOWN = [*FIX_AND_TEST, bash("sed -i '/^tests!/d' tests/lexer.rs"), bash(SUBMIT)]
DTD_04 = '// DTD with an internal subset\\ntest!(dtd_04, "<!DOCTYPE f []>");\\n'
EXTENDS = [*FIX_AND_TEST, bash(f"printf '{DTD_04}' >> tests/lexer.rs"), bash(SUBMIT)]


def test_a_deleted_macro_test_and_a_doubt_lose_to_an_attempt_that_extends_the_test_file(
    calc: FakeGitHub, tmp_path: Path
) -> None:
    # Seen on xmlparser with `--attempts 2`: the App chose the attempt that deleted `test!(dtd_03, …)`, invisible to
    # a scanner that knew only `#[test]` functions (and the smaller change).
    commit_files(calc, REPO, {"tests/lexer.rs": LEXER})
    world = Attempts(calc, tmp_path, {0.0: DELETES_MACRO, 0.7: DELETES_UNKNOWN, 1.0: EXTENDS})
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert outcome.run_id.endswith("-3")
    head = calc.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "test!(dtd_04" in calc.show(REPO, head, "tests/lexer.rs")
    rows = table_rows(calc.pulls[0]["body"])
    assert "**yes**" in rows[3] and ":warning:" not in rows[3]
    assert ":warning: drops existing tests: tests/lexer.rs::dtd_03" in rows[1]
    assert "attempt 3 drops none" in rows[1] and "attempt 3 drops none" in rows[2]
    unknown = 'tests/lexer.rs::tests!{ "<!DOCTYPE d>", "<!DOCTYPE e>" }'
    assert f"whether it drops tests cannot be told (gone: {unknown})" in rows[2]
    run_id = outcome.run_id.rsplit("-", 1)[0]
    verdicts = [
        json.loads((world.settings.data_dir / "runs" / f"{run_id}-{k}" / "trajectory.json").read_text())["mini_fix"]
        for k in (1, 2, 3)
    ]
    assert [v["dropped_tests"]["tests"] for v in verdicts] == [["tests/lexer.rs::dtd_03"], [], []]
    assert [v["dropped_tests"]["uncertain"] for v in verdicts] == [[], [unknown], []]


def test_a_chosen_change_that_drops_tests_is_flagged_in_the_pr(calc: FakeGitHub, tmp_path: Path) -> None:
    commit_files(calc, REPO, {CONFIG: REPO_CONFIG.replace("attempts: 3", "attempts: 2")})
    world = Attempts(calc, tmp_path, {0.0: DROPS, 0.7: BREAKS})
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = calc.pulls
    assert f"> This change drops existing tests: {ZERO}. They are in the base branch" in pr["body"]
    assert f"but it drops existing tests: {ZERO}" in table_rows(pr["body"])[1]


def test_no_acceptable_attempt_says_so_with_the_table(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 3\nlimits:\n  steps: 2\n"})
    workflow = [bash("mkdir -p .github/workflows && echo x > .github/workflows/ci.yml"), bash(SUBMIT)]
    wander = [bash("ls"), bash("ls -a"), bash("ls -la")]
    world = Attempts(github, tmp_path, {0.0: [bash(SUBMIT)], 0.7: workflow, 1.0: wander})
    outcome = world.run()
    assert outcome.status == JobStatus.FAILED and outcome.error and outcome.error.startswith("no_acceptable_attempt")
    assert github.pulls == [] and github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None
    comment = world.issue_comments()[-1]
    assert "no attempt left a change" in comment and "/agent retry" in comment
    rows = table_rows(comment)
    assert set(rows) == {1, 2, 3}
    assert ".github/workflows/ci.yml" in rows[2] and "LimitsExceeded" in rows[3]
    assert world.reactions()[-1] == "confused" and all(box.closed for box in world.sandboxes)


def test_attempts_that_all_end_the_same_way_read_as_that_ending(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 2\n"})
    world = Attempts(github, tmp_path, {0.0: [bash(SUBMIT)], 0.7: [bash(SUBMIT)]})
    outcome = world.run()
    assert outcome.error == "empty_diff"
    comment = world.issue_comments()[-1]
    assert "made no changes" in comment and set(table_rows(comment)) == {1, 2}


def test_stop_during_the_attempts_stops_them_all(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 3\n"})
    slow = [bash("sleep 4"), bash("sleep 4"), bash(SUBMIT)]
    world = Attempts(github, tmp_path, {0.0: slow, 0.7: list(slow), 1.0: list(slow)})
    cancel = CancelSignal()

    def stop_when_all_started() -> None:
        while sum(1 for box in list(world.sandboxes) if "sleep 4" in box.commands) < 3:
            threading.Event().wait(0.05)
        cancel.cancel("/agent stop by @alice")

    stopper = threading.Thread(target=stop_when_all_started, daemon=True)
    stopper.start()
    outcome = world.run(cancel=cancel)
    stopper.join(30)
    assert outcome.status == JobStatus.CANCELLED
    assert all(len(model.requests) == 1 for _, model in world.models)  # no attempt took another step
    assert all(box.closed for box in world.sandboxes) and github.pulls == []
    assert "stopped" in world.issue_comments()[0] and "alice" in world.issue_comments()[0]


def test_the_job_total_token_budget_stops_every_attempt(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 2\n"})
    busy = [bash("true")] * 30  # 110 tokens a step; never submits
    world = Attempts(github, tmp_path, {0.0: busy, 0.7: list(busy)}, max_tokens=1000)
    outcome = world.run()
    assert outcome.error and outcome.error.startswith("limits")
    comment = world.issue_comments()[-1]
    assert "token budget over all attempts (1,000, MINIFIX_MAX_TOKENS)" in comment
    steps = sum(len(model.requests) for _, model in world.models)
    assert 1000 // 110 <= steps <= 1000 // 110 + 2  # each attempt stops before its next call once the total is spent


def test_retry_reruns_every_attempt_and_updates_the_pr(calc: FakeGitHub, tmp_path: Path) -> None:
    scripts = {0.0: BREAKS + BREAKS, 0.7: LARGE + LARGE, 1.0: SMALL + SMALL}
    world = Attempts(calc, tmp_path, {t: s[: len(s) // 2] for t, s in scripts.items()})
    first = world.run()
    world.scripts = {t: s[len(s) // 2 :] for t, s in scripts.items()}
    second = world.run(kind=JobKind.RETRY, id="job2", delivery_id="d2", guidance="keep it small")
    assert first.status == second.status == JobStatus.SUCCEEDED, second.error
    assert len(world.models) == 6 and len(calc.pulls) == 1 and second.pr_url == first.pr_url
    assert all("keep it small" in model.requests[0][1]["content"] for _, model in world.models[3:])
    assert len(table_rows(calc.pulls[0]["body"])) == 3


def test_jobs_sharing_a_worker_take_turns_for_its_sandboxes(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 2\ntest: exit 0\n"})  # a test: verify starts sandboxes too
    other = github.add_issue(REPO, "add() is slow", "it sleeps", author="alice")
    fix = [bash("sed -i 's/a - b/a + b/' calc.py"), bash(SUBMIT)]
    world = Attempts(github, tmp_path, {0.0: fix * 2, 0.7: fix * 2})
    world.slots = SandboxSlots(1)  # one sandbox at a time for the whole worker, verify's included
    world.count_verify = True
    world.model_for = _shared_scripts(world)  # type: ignore[method-assign]
    results: dict[int, Any] = {}
    jobs = [
        threading.Thread(target=lambda n=n: results.update({n: world.run(id=f"j{n}", delivery_id=f"d{n}", issue=n)}))
        for n in (world.issue, other)
    ]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(120)
    assert [results[n].status for n in (world.issue, other)] == [JobStatus.SUCCEEDED] * 2
    assert len(world.sandboxes) == 8  # 2 jobs x 2 attempts, each verified once
    assert world.most_open == 1 and all(box.closed for box in world.sandboxes)


def _shared_scripts(world: Attempts) -> Any:
    """Each call gets a fresh copy of its temperature's script (two jobs use the same scripts)."""

    def model_for(config: ModelConfig) -> ScriptedModel:
        temperature = config.model_kwargs["temperature"]
        model = ScriptedModel(world.scripts[temperature][:2])
        with world._lock:
            world.models.append((temperature, model))
        return model

    return model_for


def test_an_attempt_that_leaks_a_secret_is_refused_and_the_clean_one_published(
    github: FakeGitHub, tmp_path: Path
) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 2\n"})
    token = "operator-token-5d2f8e0c9a7b"
    leak = [bash(f"echo {token} > leaked.txt && sed -i 's/a - b/a + b/' calc.py"), bash(SUBMIT)]
    clean = [bash("sed -i 's/a - b/b + a/' calc.py"), bash("echo '# add' >> calc.py"), bash(SUBMIT)]
    world = Attempts(github, tmp_path, {0.0: leak, 0.7: clean}, operator_token=SecretStr(token))
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error  # the smaller change is refused, the other wins
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "b + a" in github.show(REPO, head, "calc.py")
    rows = table_rows(github.pulls[0]["body"])
    assert "secrets" in rows[1] and "**yes**" in rows[2]
    stored = [p.read_text() for p in (world.settings.data_dir / "runs").rglob("trajectory.json")]
    posted = [c["body"] for c in github.comments] + [p["body"] for p in github.pulls]
    assert token not in "\n".join([*posted, *stored])


def test_a_workers_sandbox_slots_follow_its_settings(tmp_path: Path) -> None:
    base = Settings(data_dir=tmp_path, workers=2, _env_file=None)
    assert sandbox_limit(base) == 2
    assert sandbox_limit(base.model_copy(update={"agent_attempts": 3})) == 6
    assert sandbox_limit(base.model_copy(update={"max_sandboxes": 4, "agent_attempts": 3})) == 4
    slots, stop = SandboxSlots(1), threading.Event()
    assert slots.try_take() and not slots.try_take()
    stop.set()
    assert slots.take(stop) is False  # a stopped job stops waiting for a slot
    slots.give()
    assert slots.take(threading.Event()) is True
