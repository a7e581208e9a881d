"""`eval mine` on a history the test builds: exactly the valid tasks, each drop with its reason, gold patches grade."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from bot.eval.grade import grade
from bot.eval.mine import MineRequest, mine
from sandbox.base import Sandbox, SandboxConfig
from sandbox.docker import DockerSandbox
from tests.integration.conftest import small_config
from tests.support.eval_repo import SHOUT_ISSUE, build_repo, write_issues
from tests.support.merge_repos import go_repo

pytestmark = pytest.mark.docker


def test_mine_finds_exactly_the_valid_tasks(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    repo = tmp_path / "textkit"
    shas = build_repo(repo)

    def factory(config: SandboxConfig, run_id: str) -> Sandbox:
        return DockerSandbox.start(config, run_id, client=docker_client)

    issues = write_issues(tmp_path / "issues.json")
    request = MineRequest(repo, tmp_path / "mined.jsonl", issues=issues, statement_from_tests=True)
    lines: list[str] = []
    mined = mine(request, factory, small_config(), lines.append)

    by_commit = {t.model_extra["commit"]: t for t in mined.tasks if t.model_extra}
    assert set(by_commit) == {shas["fix_shout"], shas["word_count"]}
    shout = by_commit[shas["fix_shout"]]
    assert shout.base_commit == shas["readme"]
    assert shout.FAIL_TO_PASS == ["tests.test_strings.ShoutTest.test_shout"]
    assert shout.PASS_TO_PASS == [
        "tests.test_strings.SlugifyTest.test_spaces",
        "tests.test_strings.SlugifyTest.test_words",
    ]
    assert shout.problem_statement == SHOUT_ISSUE  # the linked issue (#3), not the commit message
    assert "tests/test_strings.py" in shout.test_patch and "textkit/" not in shout.test_patch
    count = by_commit[shas["word_count"]]
    assert count.FAIL_TO_PASS == [
        "tests.test_count.WordCountTest.test_empty",
        "tests.test_count.WordCountTest.test_words",
    ]
    assert "tests.test_strings.ShoutTest.test_shout" in count.PASS_TO_PASS
    # No linked issue: written from the failing test and its output before the fix, never the commit message.
    assert count.problem_statement.startswith("The test WordCountTest.test_empty in tests/test_count.py fails:")
    assert "word_count" in count.problem_statement and "Add word_count()" not in count.problem_statement

    assert mined.dropped == [
        {
            "commit": shas["refactor"],
            "subject": "Rewrite slugify as a generator; test tabs",
            "kind": "nothing fails at the parent",
            "reason": "nothing fails at the parent: every test passes there with the new tests: nothing to fix",
        }
    ]
    assert mined.skipped == {"root commit": 1, "no test change": 1, "no code change": 1}
    assert any("dropped" in line for line in lines) and sum("kept" in line for line in lines) == 2

    # The commit's own code change resolves its task; no change does not.
    assert grade(shout, str(shout.model_extra["patch"]), factory, small_config(), "gold", tmp_path).resolved
    empty = grade(count, "", factory, small_config(), "none", tmp_path)
    assert not empty.resolved and empty.fail_to_pass == dict.fromkeys(count.FAIL_TO_PASS, False)


def test_mine_a_go_history_of_pr_merges_with_real_go_test(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    """A Go module whose fix arrived as a `--no-ff` PR merge: inferred `go test` reproduction, run by real Go."""
    shas = go_repo(tmp_path / "calc", fix_message="Make Add add")

    def factory(config: SandboxConfig, run_id: str) -> Sandbox:
        return DockerSandbox.start(config, run_id, client=docker_client)

    request = MineRequest(tmp_path / "calc", tmp_path / "mined.jsonl", statement_from_tests=True)
    config = small_config(memory="1g", pids_limit=512, timeout=120)
    mined = mine(request, factory, config, lambda line: None)

    assert mined.dropped == []
    [task] = mined.tasks
    assert task.model_extra and task.model_extra["commit"] == shas["merge"] and task.base_commit == shas["docs"]
    assert task.FAIL_TO_PASS == ["go test . -run '^(TestAdd)$'"]
    assert task.problem_statement.startswith("The test TestAdd in add_test.go fails:")
    assert "--- FAIL: TestAdd" in task.problem_statement and "Make Add add" not in task.problem_statement
    assert grade(task, str(task.model_extra["patch"]), factory, config, "gold", tmp_path).resolved
