"""`eval mine` without Docker: small real git histories (merge commits made with `--no-ff`) mined through the
host-side fake sandbox, which runs the tests with the host's own tools (python3; a stand-in `go` that judges the
checkout it is run in)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.eval.history import Candidate, is_test_path, scan
from bot.eval.mine import EACH_COMMAND, MineRequest, _plan, mine
from bot.pipeline.judge import testbed
from sandbox.base import Sandbox, SandboxConfig
from tests.support.fake_sandbox import FakeSandbox
from tests.support.merge_repos import FIX_MESSAGE, go_repo, python_repo

# A stand-in for `go test` (the host has no Go): it passes when the checkout's Add adds, else prints go's failure.
FAKE_GO = """#!/bin/sh
if grep -q 'a + b' add.go; then echo "ok  	example.com/calc	0.002s"; exit 0; fi
echo "--- FAIL: TestAdd (0.00s)"
echo "    add_test.go:13: Add(1, 2) = -1, want 3"
echo "FAIL	example.com/calc	0.002s"
exit 1
"""


class _Factory:
    """Fake sandboxes with `bin` first on their PATH; each one's commands kept."""

    def __init__(self, bin_dir: Path | None = None) -> None:
        self.path = f"{bin_dir}:/usr/bin:/bin" if bin_dir else "/usr/bin:/bin"
        self.boxes: list[FakeSandbox] = []

    def __call__(self, config: SandboxConfig, run_id: str) -> Sandbox:
        box = FakeSandbox(env={"PATH": self.path}, timeout=60)
        self.boxes.append(box)
        return box


def _fake_go(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "go").write_text(FAKE_GO)
    (bin_dir / "go").chmod(0o755)
    return bin_dir


def _issues(path: Path, number: int, title: str, body: str) -> Path:
    path.write_text(json.dumps([{"number": number, "title": title, "body": body}]))
    return path


def test_a_pr_merge_commit_is_a_candidate_against_its_first_parent(tmp_path: Path) -> None:
    shas = go_repo(tmp_path / "calc")
    found, skipped = scan(tmp_path / "calc", "HEAD", 50)
    assert [c.sha for c in found] == [shas["merge"]]
    merge = found[0]
    assert merge.parent == shas["docs"]  # the first parent: the branch it merged into
    assert merge.test_files == ("add_test.go",)
    assert "+func TestAdd(" in merge.test_patch and "add.go" not in merge.test_patch
    assert "a + b" in merge.patch and "README" not in merge.patch  # main's own commit is not part of the merge
    assert "fixes #7" in merge.refs  # the merged commit's message, where the linked issue is named
    assert skipped == {"root commit": 1, "no test change": 1, "no code change": 0}  # the README commit


def test_go_tests_other_languages_test_files_count() -> None:
    for path in ("FooTest.java", "src/test/java/a/BarTests.java", "web/__tests__/app.js", "src/app.spec.ts"):
        assert is_test_path(path), path
    for path in ("src/main/java/a/Foo.java", "web/app.ts", "src/lib.go"):
        assert not is_test_path(path), path


def test_go_merge_is_mined_with_the_inferred_reproduction_and_the_linked_issue(tmp_path: Path) -> None:
    shas = go_repo(tmp_path / "calc")
    issues = _issues(tmp_path / "issues.json", 7, "Add subtracts", "Add(1, 2) returns -1.")
    factory = _Factory(_fake_go(tmp_path))
    request = MineRequest(tmp_path / "calc", tmp_path / "mined.jsonl", issues=issues)
    mined = mine(request, factory, SandboxConfig(), lambda line: None)

    assert mined.dropped == []
    [task] = mined.tasks
    reproduction = "go test . -run '^(TestAdd)$'"  # the App's Go template, filled from the merge's own diff
    assert [reproduction] == task.FAIL_TO_PASS and task.PASS_TO_PASS == []
    assert task.base_commit == shas["docs"] and task.model_extra and task.model_extra["commit"] == shas["merge"]
    assert task.test == "go test ./..." and task.reproduce == "go test {packages} -run {pattern}"
    assert task.test_cmd == EACH_COMMAND
    assert task.problem_statement == "Add subtracts\n\nAdd(1, 2) returns -1." and task.model_extra["issue"] == 7
    ran = [c for box in factory.boxes for c in box.commands if "go test" in c]
    assert ran and all(c == testbed.test_command(EACH_COMMAND, [reproduction]) for c in ran)


def test_a_candidate_without_a_linked_issue_is_skipped_and_counted(tmp_path: Path) -> None:
    go_repo(tmp_path / "calc", fix_message="Make Add add")
    factory = _Factory(_fake_go(tmp_path))
    lines: list[str] = []
    mined = mine(MineRequest(tmp_path / "calc", tmp_path / "mined.jsonl"), factory, SandboxConfig(), lines.append)
    assert mined.tasks == [] and [d["kind"] for d in mined.dropped] == ["no linked issue"]
    assert mined.summary()["skipped_by_reason"] == {"no linked issue": 1}
    assert "mine: skipped 1 (no linked issue)" in lines
    assert factory.boxes == []  # skipped before any sandbox ran


def test_python_statement_from_tests_quotes_only_the_failing_test(tmp_path: Path) -> None:
    shas = python_repo(tmp_path / "textkit")
    factory = _Factory()
    request = MineRequest(tmp_path / "textkit", tmp_path / "mined.jsonl", statement_from_tests=True)
    mined = mine(request, factory, SandboxConfig(), lambda line: None)

    [task] = mined.tasks
    assert task.model_extra and task.model_extra["commit"] == shas["merge"] and task.base_commit == shas["docs"]
    assert task.FAIL_TO_PASS == ["tests.test_strings.ShoutTest.test_shout"]
    assert task.PASS_TO_PASS == ["tests.test_strings.ShoutTest.test_bang"]
    statement = task.problem_statement
    assert statement.startswith("The test ShoutTest.test_shout in tests/test_strings.py fails:")
    assert "AssertionError: 'hi!' != 'HI!'" in statement  # the failure output captured at the parent
    assert FIX_MESSAGE not in statement and "Merge pull request" not in statement
    assert "upper" not in statement  # nothing of the fix's diff
    assert "issue" not in task.model_extra or task.model_extra["issue"] is None


def test_python_without_linked_issue_or_option_is_skipped(tmp_path: Path) -> None:
    python_repo(tmp_path / "textkit")
    mined = mine(MineRequest(tmp_path / "textkit", tmp_path / "m.jsonl"), _Factory(), SandboxConfig(), print)
    assert mined.tasks == [] and mined.reasons() == {"no linked issue": 1}


@pytest.mark.parametrize(
    ("files", "test_file", "test_patch", "expected"),
    [
        (
            {"Cargo.toml": "[package]\nname = 'x'\n"},
            "tests/parse.rs",
            "+++ b/tests/parse.rs\n+#[test]\n+fn parses_empty() {}\n",
            ["cargo test --offline -- parses_empty"],
        ),
        (
            {"package.json": json.dumps({"scripts": {"test": "mocha"}})},
            "test/big.test.js",
            "+++ b/test/big.test.js\n+it('rounds', () => {})\n",
            ["npx mocha test/big.test.js"],
        ),
        (
            {"pom.xml": "<project/>"},
            "src/test/java/a/RoundTest.java",
            "+++ b/src/test/java/a/RoundTest.java\n+    @Test void rounds() {}\n",
            [
                "mvn -o -B test -Dtest=RoundTest -DfailIfNoTests=false -Dsurefire.failIfNoSpecifiedTests=false",
            ],
        ),
    ],
)
def test_rust_js_java_candidates_get_the_apps_reproduction(
    tmp_path: Path, files: dict[str, str], test_file: str, test_patch: str, expected: list[str]
) -> None:
    for name, text in {**files, test_file: "// tests\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    candidate = Candidate("a" * 40, "b" * 40, "Fix it", f"--- a/{test_file}\n{test_patch}", "", (test_file,))
    tests = _plan(MineRequest(tmp_path, tmp_path / "m.jsonl"), candidate, tmp_path)
    assert tests.tests == expected and tests.test_cmd == EACH_COMMAND


def test_the_command_line_defaults_to_the_apps_inference_and_takes_statement_from_tests() -> None:
    from bot.eval.cli import _mine_parser

    args = _mine_parser().parse_args(["repo", "--statement-from-tests"])
    assert args.runner == "auto" and args.statement_from_tests is True
    assert MineRequest(Path("r"), Path("o")).runner == "auto"
    assert _mine_parser().parse_args(["repo"]).statement_from_tests is False
