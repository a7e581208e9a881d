"""`mini-fix eval` runs its attempts in the App's engine: `--attempt-workers` bound the engine's attempts (in order),
and the report's statistics are the engine's. Host-side fake sandboxes, a scripted model, a real git repository."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from bot.agent.config import ModelConfig, load_config
from bot.agent.model_base import Model, ModelReply
from bot.eval.harness import run_tasks
from bot.eval.solve import EvalContext
from bot.eval.store import ResultStore
from bot.eval.tasks import EvalTask
from bot.settings import Settings
from sandbox.base import SandboxConfig
from tests.support.buggy_repos import REPOS
from tests.support.buggy_tasks import FIXES, SUBMIT, eval_task, scripted_commands
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import ScriptedModel, bash


class Alive:
    """Fake sandboxes that count the attempts' containers alive at once (verification and grading aside)."""

    def __init__(self) -> None:
        self.alive = self.peak = 0
        self.started: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, config: SandboxConfig, run_id: str) -> FakeSandbox:
        sandbox = FakeSandbox(env=config.env)  # the agent's env (PYTHONDONTWRITEBYTECODE: no stale .pyc in a diff)
        if "-verify-" in run_id or run_id.endswith("-grade"):
            return sandbox
        with self._lock:
            self.started.append(run_id)
            self.alive += 1
            self.peak = max(self.peak, self.alive)
        close = sandbox.close

        def closing() -> None:
            with self._lock:
                self.alive -= 0 if sandbox.closed else 1
            close()

        sandbox.close = closing  # type: ignore[method-assign]
        return sandbox


class Logged:
    """A scripted attempt's model that logs its temperature at every request, in the order the requests came."""

    def __init__(self, heat: float, log: list[float]) -> None:
        self.name, self._heat, self._log = "scripted", heat, log
        self._model = ScriptedModel([bash(c) for c in scripted_commands("calc", heat)])

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        self._log.append(self._heat)
        return self._model.query(messages)


def _run(tmp: Path, attempts: int | None, workers: int | None) -> tuple[dict[str, Any], Alive, list[float]]:
    settings = Settings(webhook_secret="s" * 32, data_dir=tmp / "data", _env_file=None)
    requests: list[float] = []

    def model(config: ModelConfig) -> Model:
        return Logged(float(config.model_kwargs["temperature"]), requests)

    config, sandboxes = load_config(None), Alive()
    ctx = EvalContext(
        settings, config, config.model, model, sandboxes, tmp / "out", threading.Event(), attempts, workers
    )
    task = EvalTask.model_validate(eval_task(REPOS["calc"], tmp / "repos"))
    store = ResultStore(ctx.output)
    run_tasks([task], ctx, store, workers=1, say=lambda _line: None)
    return store.finished()["calc"], sandboxes, requests


def test_attempt_workers_are_the_engines_bound_and_the_statistics_its_own(tmp_path: Path) -> None:
    record, sandboxes, requests = _run(tmp_path, 3, 2)
    group = record["run_id"]
    assert [a["run_id"] for a in record["attempts"]] == [f"{group}-{k}" for k in (1, 2, 3)]  # the engine's ids
    assert sorted(sandboxes.started) == [f"{group}-{k}" for k in (1, 2, 3)] and sandboxes.alive == 0
    assert sandboxes.peak <= 2 and sandboxes.started[-1] == f"{group}-3"  # the third waited for a turn
    assert sorted(requests) == sorted([0.0] * 2 + [0.7] * 2 + [1.0] * 4)
    assert [a["steps"] for a in record["attempts"]] == [2, 2, 4] and record["steps"] == 8
    assert all(a["tokens"] == a["steps"] * 110 and a["model_seconds"] >= 0 for a in record["attempts"])
    assert (record["chosen"], record["resolved"], record["any_resolved"]) == (3, True, True)


def test_one_attempt_worker_runs_them_in_order_one_after_another(tmp_path: Path) -> None:
    record, sandboxes, requests = _run(tmp_path, 3, 1)
    assert requests == [0.0] * 2 + [0.7] * 2 + [1.0] * 4  # no two attempts overlapped, and in attempt order
    assert sandboxes.peak == 1 and sandboxes.started == [f"{record['run_id']}-{k}" for k in (1, 2, 3)]


def test_a_single_attempt_is_the_engines_case_of_one(tmp_path: Path) -> None:
    record, sandboxes, requests = _run(tmp_path, None, None)
    assert sandboxes.started == [record["run_id"]] and requests == [0.0, 0.0]  # the config's own temperature
    assert (record["steps"], record["tokens"], record["exit_status"]) == (2, 220, "Submitted")
    assert record["model_seconds"] >= 0 and "import no_such_module" in record["model_patch"]
    assert record["resolved"] is False


def test_evals_first_message_names_the_test_command_as_the_apps_does(tmp_path: Path) -> None:
    settings = Settings(webhook_secret="s" * 32, data_dir=tmp_path / "data", _env_file=None)
    firsts: list[str] = []

    class First(ScriptedModel):
        def query(self, messages: list[dict[str, Any]]) -> ModelReply:
            if len(messages) == 2:
                firsts.append(messages[1]["content"])
            return super().query(messages)

    config = load_config(None)
    ctx = EvalContext(
        settings, config, config.model, lambda _c: First([bash("true"), bash(SUBMIT)]),
        lambda c, _run_id: FakeSandbox(env=c.env),
        tmp_path / "out", threading.Event(),
    )  # fmt: skip
    spec = eval_task(REPOS["calc"], tmp_path / "repos")
    del spec["test"]  # nothing configured: the command is inferred from the checkout, as for a job
    run_tasks([EvalTask.model_validate(spec)], ctx, ResultStore(ctx.output), workers=1, say=lambda _line: None)
    [first] = firsts
    assert "The repository's tests run with `python3 -m unittest discover -t . -s .` from /testbed" in first
    assert "`python3 -m unittest` and the test file's path" in first  # how to run one test, in its language


def _one(tmp: Path, commands: list[str]) -> dict[str, Any]:
    """One eval task, one scripted attempt (no `--attempts`)."""
    settings = Settings(webhook_secret="s" * 32, data_dir=tmp / "data", _env_file=None)
    config = load_config(None)
    ctx = EvalContext(
        settings, config, config.model, lambda _c: ScriptedModel([bash(c) for c in commands]),
        lambda c, _run_id: FakeSandbox(env=c.env), tmp / "out", threading.Event(),
    )  # fmt: skip
    task = EvalTask.model_validate(eval_task(REPOS["calc"], tmp / "repos"))
    store = ResultStore(ctx.output)
    run_tasks([task], ctx, store, workers=1, say=lambda _line: None)
    return store.finished()["calc"]


def test_a_single_attempt_goes_through_the_apps_judge_which_refuses_what_it_would_never_push(tmp_path: Path) -> None:
    fix, _ = FIXES["calc"]
    record = _one(tmp_path, [f"{fix} && ln -s ops.py calc/alias.py", SUBMIT])
    assert record["refused"] == ["calc/alias.py (symlink)"] and record["model_patch"] == ""
    assert record["resolved"] is False and "refused" in record["error"]


def test_a_single_attempts_trajectory_holds_the_judges_verdicts(tmp_path: Path) -> None:
    fix, _ = FIXES["calc"]
    record = _one(tmp_path, [fix, SUBMIT])
    assert record["resolved"] is True and "return a + b" in record["model_patch"]
    saved = json.loads((tmp_path / "out" / "trajectories" / "calc" / "calc.traj.json").read_text())
    assert saved["mini_fix"]["chosen"] is True and saved["mini_fix"]["test"]["passed"] is True
