"""Eval's files without a sandbox: tasks files, the history scan (real git), results, reports and comparisons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.eval.compare import compare, render_comparison
from bot.eval.history import is_code_path, is_test_path, linked_issue, scan
from bot.eval.store import OutputInUse, ResultStore
from bot.eval.tasks import load_tasks
from bot.pipeline.git.gitops import GitError
from bot.pipeline.git.hostgit import apply_patch, base_checkout, git
from tests.support.eval_repo import build_repo

TASK = {"instance_id": "a-1", "base_commit": "abc123", "problem_statement": "p", "git": "/x"}


def test_tasks_file_takes_swe_bench_strings_and_reports_bad_lines(tmp_path: Path) -> None:
    lines = [
        {**TASK, "FAIL_TO_PASS": '["t.A.test_a"]', "PASS_TO_PASS": ["t.A.test_b"], "version": "1.0"},
        {**TASK},
        {**TASK, "instance_id": "../escape"},
        {"instance_id": "b-2"},
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    tasks, bad = load_tasks(path)
    assert [t.instance_id for t in tasks] == ["a-1"]
    assert tasks[0].FAIL_TO_PASS == ["t.A.test_a"] and tasks[0].PASS_TO_PASS == ["t.A.test_b"]
    assert [where.rsplit(":", 1)[1] for where, _ in bad] == ["2", "3", "4", "5"]
    assert "duplicate" in bad[0][1] and "instance_id" in bad[1][1] and "base_commit" in bad[2][1]


def test_paths_are_told_apart() -> None:
    assert is_test_path("tests/test_x.py") and is_test_path("pkg/test_y.py") and is_test_path("src/a_test.go")
    assert not is_test_path("pkg/testing_utils.py")
    assert is_code_path("pkg/core.py") and not is_code_path("README.md") and not is_code_path("docs/x.py")


def test_scan_keeps_commits_that_change_tests_and_code(tmp_path: Path) -> None:
    shas = build_repo(tmp_path / "r")
    found, skipped = scan(tmp_path / "r", "HEAD", 50)
    assert [c.sha for c in found] == [shas["refactor"], shas["word_count"], shas["fix_shout"]]
    assert skipped == {"root commit": 1, "no test change": 1, "no code change": 1}
    shout = found[-1]
    assert shout.parent == shas["readme"] and "tests/test_strings.py" in shout.test_patch
    assert "textkit/strings.py" in shout.patch and "tests/" not in shout.patch


def test_linked_issue_prefers_a_known_one_and_never_falls_back_to_the_message() -> None:
    issues = {3: "Title\n\nBody"}
    assert linked_issue("Fix it\n\nFixes #3", issues) == ("Title\n\nBody", 3)
    assert linked_issue("Fix it (see #3)", issues) == ("Title\n\nBody", 3)
    assert linked_issue("Fix it\n\nFixes #4", issues) is None


def test_base_checkout_holds_no_later_history(tmp_path: Path) -> None:
    shas = build_repo(tmp_path / "r")
    head = base_checkout(str(tmp_path / "r"), shas["readme"][:8], tmp_path / "c")
    assert head == shas["readme"]
    assert git(["rev-list", "--all"], cwd=tmp_path / "c").split() == [shas["readme"], shas["initial"]]
    with pytest.raises(GitError, match="git cat-file failed"):
        git(["cat-file", "-t", shas["fix_shout"]], cwd=tmp_path / "c")
    with pytest.raises(GitError, match="base commit 0000000 is not in"):
        base_checkout(str(tmp_path / "r"), "0000000", tmp_path / "d")
    with pytest.raises(GitError, match="the model patch does not apply"):
        apply_patch(tmp_path / "c", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "the model patch")


def test_store_refuses_another_models_directory_and_ignores_a_torn_line(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "out")
    store.claim({"model": "m1", "config_digest": "d"})
    store.claim({"model": "m1", "config_digest": "d"})
    with pytest.raises(OutputInUse, match="holds results of m1"):
        store.claim({"model": "m2", "config_digest": "d"})
    store.add({"instance_id": "a-1", "resolved": True, "model_patch": "p"})
    with (tmp_path / "out" / "results.jsonl").open("a") as f:
        f.write('{"instance_id": "b-')
    assert list(store.finished()) == ["a-1"]


def test_compare_lists_flips_and_totals() -> None:
    a = {
        "model": "A",
        "resolved": 1,
        "total": 3,
        "tasks": [
            {"instance_id": "x", "resolved": True},
            {"instance_id": "y", "resolved": False},
            {"instance_id": "z", "resolved": False},
        ],
    }
    b = {
        "model": "B",
        "resolved": 1,
        "total": 3,
        "tasks": [
            {"instance_id": "x", "resolved": False},
            {"instance_id": "y", "resolved": True},
            {"instance_id": "w", "resolved": False},
        ],
    }
    diff = compare(a, b)
    assert (diff["fixed"], diff["broken"], diff["only_a"], diff["only_b"]) == (["y"], ["x"], ["z"], ["w"])
    text = render_comparison(diff)
    assert "1 fixed in B, 1 broken in B" in text and "  + y" in text and "  - x" in text
