"""`mini-fix eval` in process: the real agent loop and Docker sandbox, a scripted model, a repository with history."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import docker
import pytest

from bot.agent.config import load_config
from bot.eval.harness import run_tasks
from bot.eval.solve import EvalContext
from bot.eval.store import ResultStore
from bot.eval.tasks import EvalTask
from bot.pipeline.git.hostgit import diff
from bot.settings import Settings
from sandbox.base import Sandbox, SandboxConfig
from sandbox.docker import DockerSandbox
from tests.integration.conftest import IMAGE
from tests.support.eval_repo import SHOUT_ISSUE, build_repo
from tests.support.scripted_model import bash
from tests.support.task_router import SUBMIT, TaskRouter

pytestmark = pytest.mark.docker

FIX = "sed -i 's/text.lower() + /text.upper() + /' textkit/strings.py"
SCRIPTS = {
    "[right]": [bash("cat textkit/strings.py"), bash(FIX), bash(SUBMIT)],
    "[wrong]": [bash('sed -i \'s/+ "!"/+ "!!"/\' textkit/strings.py'), bash(SUBMIT)],
    "[empty]": [bash("grep -n shout -r ."), bash(SUBMIT)],
    "[breaks]": [bash(f'{FIX} && sed -i \'s/"-".join/"_".join/\' textkit/strings.py'), bash(SUBMIT)],
    "[badcommit]": [bash(SUBMIT)],
}
SHOUT = "tests.test_strings.ShoutTest.test_shout"
SLUGS = ["tests.test_strings.SlugifyTest.test_spaces", "tests.test_strings.SlugifyTest.test_words"]


def _tasks(repo: Path, shas: dict[str, str]) -> list[EvalTask]:
    base = {
        "repo": "local/textkit",
        "base_commit": shas["readme"],
        "test_patch": diff(repo, shas["readme"], shas["fix_shout"], ["tests"]),
        "FAIL_TO_PASS": json.dumps([SHOUT]),  # as SWE-bench stores them: JSON in a string
        "PASS_TO_PASS": SLUGS,
        "git": str(repo),
    }
    tasks = [
        EvalTask.model_validate({**base, "instance_id": f"shout-{m[1:-1]}", "problem_statement": f"{SHOUT_ISSUE} {m}"})
        for m in SCRIPTS
    ]
    tasks[-1] = tasks[-1].model_copy(update={"base_commit": "deadbeef"})
    return tasks


@pytest.fixture
def context(tmp_path: Path, docker_client: docker.DockerClient) -> tuple[EvalContext, TaskRouter]:
    settings = Settings(webhook_secret="s" * 32, data_dir=tmp_path / "data", sandbox_image=IMAGE, _env_file=None)
    router = TaskRouter(SCRIPTS)

    def sandbox(config: SandboxConfig, run_id: str) -> Sandbox:
        return DockerSandbox.start(config.model_copy(update={"memory": "512m"}), run_id, client=docker_client)

    config = load_config(None)
    ctx = EvalContext(settings, config, config.model, lambda _c: router, sandbox, tmp_path / "out", threading.Event())
    return ctx, router


def _records(ctx: EvalContext) -> dict[str, dict[str, Any]]:
    return ResultStore(ctx.output).finished()


def test_grading_resolves_only_the_right_fix_and_resumes(
    tmp_path: Path, context: tuple[EvalContext, TaskRouter]
) -> None:
    ctx, router = context
    repo = tmp_path / "textkit"
    tasks = _tasks(repo, build_repo(repo))
    store = ResultStore(ctx.output)
    lines: list[str] = []
    run_tasks(tasks, ctx, store, workers=2, say=lines.append)
    report = store.write_report(tasks, "scripted", [])
    records = _records(ctx)

    assert report["resolved"] == 1 and report["total"] == 5 and report["errors"] == 1
    assert records["shout-right"]["resolved"] is True
    assert records["shout-right"]["tests"]["FAIL_TO_PASS"] == {"passed": [SHOUT], "failed": []}
    assert records["shout-wrong"]["resolved"] is False
    assert records["shout-wrong"]["tests"]["FAIL_TO_PASS"]["failed"] == [SHOUT]
    assert records["shout-empty"]["resolved"] is False and records["shout-empty"]["model_patch"] == ""
    breaks = records["shout-breaks"]
    assert breaks["resolved"] is False
    assert breaks["tests"]["FAIL_TO_PASS"]["passed"] == [SHOUT]
    assert sorted(breaks["tests"]["PASS_TO_PASS"]["failed"]) == SLUGS
    bad = records["shout-badcommit"]
    assert bad["exit_status"] == "error" and "deadbeef" in bad["error"] and router.calls["[badcommit]"] == 0
    assert records["shout-right"]["steps"] == 3 and records["shout-right"]["tokens"] == 330

    predictions = [json.loads(line) for line in (ctx.output / "predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == [t.instance_id for t in tasks]
    right = next(p for p in predictions if p["instance_id"] == "shout-right")
    assert "+    return text.upper() + " in right["model_patch"] and right["model_name_or_path"] == "scripted"
    trajectory = json.loads(ctx.trajectory_path(tasks[0]).read_text())
    assert trajectory["mini_fix"]["eval"]["resolved"] is True
    assert trajectory["info"]["exit_status"] == "Submitted"
    assert lines[-1].startswith("[5/5] resolved 1 errors 1")

    calls = dict(router.calls)
    again: list[str] = []
    run_tasks(tasks, ctx, store, workers=2, say=again.append)
    assert router.calls == calls  # every task was finished: nothing ran again
    assert again == ["resuming: 5 of 5 already finished, 0 to run"]


def test_the_agent_never_sees_later_history_or_the_test_patch(
    tmp_path: Path, context: tuple[EvalContext, TaskRouter]
) -> None:
    ctx, _router = context
    repo = tmp_path / "textkit"
    shas = build_repo(repo)
    task = _tasks(repo, shas)[0].model_copy(update={"instance_id": "peek"})
    probe = (
        f"git log --all --format=%H; git cat-file -e {shas['fix_shout']} 2>/dev/null && echo present || echo absent;"
        " grep -rl test_shout tests || echo untested"
    )
    router = TaskRouter({"[right]": [bash(probe), bash(SUBMIT)]})
    ctx.model = lambda _c: router
    run_tasks([task], ctx, ResultStore(ctx.output), workers=1, say=lambda _line: None)
    trajectory = json.loads(ctx.trajectory_path(task).read_text())
    seen = trajectory["messages"][3]["extra"]["raw_output"].split()
    assert seen == [shas["readme"], shas["initial"], "absent", "untested"]
