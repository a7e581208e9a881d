"""`mini-fix export`: messages exactly as the model saw them, metadata, filters, opt-outs and redaction."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.cli.main import _parser
from bot.eval.export import ExportFilter, eval_trajectories, write_export
from bot.eval.export_app import app_trajectories
from bot.eval.export_command import run_export
from bot.jobs import Job, JobKind, JobStatus
from bot.settings import Settings
from bot.trajectory import RunStats, TrajectoryWriter, annotate_trajectory
from bot.trajectory_store import LocalTrajectories

TOKEN = "ghs_" + "A1b2" * 9
SECRET = "operator-webhook-secret-value"


def _messages(*, format_error: bool = False, leak: str = "") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs.\n"},
        {"role": "user", "content": "Fix shout()  \u2014 tabs\tand trailing space "},
        {"role": "assistant", "content": "THOUGHT: look\n\n```mswea_bash_command\ncat x\n```", "extra": {"cost": 0}},
        {"role": "user", "content": f"<returncode>0</returncode>\n<output>{leak}</output>", "extra": {}},
    ]
    if format_error:
        messages.append({"role": "user", "content": "Format error", "extra": {"interrupt_type": "FormatError"}})
    messages.append({"role": "assistant", "content": "```mswea_bash_command\nsubmit\n```"})
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}})
    return messages


def _save(path: Path, messages: list[dict[str, Any]], secrets: tuple[str, ...] = (SECRET,), **mini_fix: Any) -> None:
    writer = TrajectoryWriter(path, secrets=secrets, mini_fix=mini_fix)
    writer.save(messages, config={"model": {"model_name": "hosted_vllm/m"}}, stats=RunStats(2, 0.0, 200, 20, 3.0))


def _eval_dir(root: Path) -> Path:
    for name, resolved, fmt in [("ok", True, False), ("bad", False, False), ("fmt", True, True)]:
        path = root / "trajectories" / name / f"{name}.traj.json"
        _save(path, _messages(format_error=fmt, leak=TOKEN if name == "bad" else ""), repo="o/textkit")
        annotate_trajectory(path, "eval", {"instance_id": name, "resolved": resolved, "tests": {}})
    return root


def _export(runs: Any, keep: ExportFilter) -> list[dict[str, Any]]:
    out = io.StringIO()
    write_export(runs, keep, [SECRET], out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_eval_runs_export_messages_byte_for_byte_labelled_by_verdict(tmp_path: Path) -> None:
    lines = _export(eval_trajectories([_eval_dir(tmp_path)]), ExportFilter())
    by_id = {line["metadata"]["instance_id"]: line for line in lines}
    assert set(by_id) == {"ok", "bad", "fmt"}
    expected = [{"role": m["role"], "content": m["content"]} for m in _messages()[:-1]]
    assert by_id["ok"]["messages"] == expected
    meta = by_id["ok"]["metadata"]
    assert (meta["outcome"], meta["source"], meta["model"], meta["steps"], meta["tokens"]) == (
        "resolved", "eval", "hosted_vllm/m", 2, 220,
    )  # fmt: skip
    assert meta["clean"] is True and by_id["fmt"]["metadata"]["clean"] is False
    assert by_id["bad"]["metadata"]["outcome"] == "unresolved"
    assert TOKEN not in json.dumps(lines) and by_id["bad"]["metadata"]["redactions"] == 1


def test_filters(tmp_path: Path) -> None:
    runs = list(eval_trajectories([_eval_dir(tmp_path)]))
    ids = lambda keep: sorted(x["metadata"]["instance_id"] for x in _export(runs, keep))  # noqa: E731
    assert ids(ExportFilter(clean=True)) == ["ok"]
    assert ids(ExportFilter(outcome="unresolved")) == ["bad"]
    assert ids(ExportFilter(repo="O/TextKit")) == ["bad", "fmt", "ok"] and ids(ExportFilter(repo="o/other")) == []
    assert ids(ExportFilter(since=datetime(2999, 1, 1, tzinfo=UTC))) == []


def test_app_runs_carry_their_job_and_honour_the_repository_opt_out(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    leaky = _messages(leak=f"secret {SECRET}")  # as a writer that did not know the secret left it
    _save(runs / "r1" / "trajectory.json", leaky, secrets=(), repo="o/a", issue=7, training=True)
    assert SECRET in (runs / "r1" / "trajectory.json").read_text()
    annotate_trajectory(runs / "r1" / "trajectory.json", "test", {"command": "make test", "passed": True})
    _save(runs / "r2" / "trajectory.json", _messages(), repo="o/private", issue=8, training=False)
    job = Job("j1", JobKind.FIX, 1, "o/a", 7, "ada", "d1", JobStatus.SUCCEEDED,
              pr_url="https://github.com/o/a/pull/9", run_id="r1")  # fmt: skip
    merged = {"state": "merged", "merged": True, "human_pushes": 0, "reviews": {}}
    exported = app_trajectories(LocalTrajectories(runs), [job], {("o/a", 9): merged})
    lines = _export(exported, ExportFilter(outcome="merged"))
    assert len(lines) == 1
    meta = lines[0]["metadata"]
    assert meta["outcome"] == "merged" and meta["pr"] == merged
    assert (meta["repo"], meta["issue"], meta["pr_url"], meta["tests_passed"], meta["clean"]) == (
        "o/a", 7, "https://github.com/o/a/pull/9", True, True,
    )  # fmt: skip
    assert SECRET not in json.dumps(lines)  # the deployment's secrets are redacted again on the way out


def test_an_attempt_the_app_did_not_choose_carries_its_job_but_not_the_merge(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for run_id in ("r1-1", "r1-2"):  # two attempts of job j1; the App published r1-2
        _save(runs / run_id / "trajectory.json", _messages(), repo="o/a", issue=7, job_id="j1", run_id=run_id)
    job = Job("j1", JobKind.FIX, 1, "o/a", 7, "ada", "d1", JobStatus.SUCCEEDED,
              pr_url="https://github.com/o/a/pull/9", run_id="r1-2")  # fmt: skip
    merged = {"state": "merged", "merged": True, "human_pushes": 0, "reviews": {}}
    lines = _export(app_trajectories(LocalTrajectories(runs), [job], {("o/a", 9): merged}), ExportFilter())
    by_run = {line["metadata"]["run_id"]: line["metadata"] for line in lines}
    assert by_run["r1-2"]["outcome"] == "merged"
    assert by_run["r1-1"]["outcome"] == "not_chosen" and by_run["r1-1"]["pr_url"] == job.pr_url


def _run(argv: list[str], **settings: Any) -> int:
    """`mini-fix export ARGV` as the CLI parses and runs it (without the process-wide logging setup)."""
    return run_export(_parser().parse_args(["export", *argv]), Settings(_env_file=None, **settings))


def test_operator_can_turn_export_off(tmp_path: Path) -> None:
    assert _run(["--eval", str(_eval_dir(tmp_path / "e")), "--no-app"], training_export=False) == 2
    out = tmp_path / "x.jsonl"
    assert _run(["--eval", str(tmp_path / "e"), "--no-app", "--clean", "--output", str(out)], data_dir=tmp_path) == 0
    assert [json.loads(line)["metadata"]["instance_id"] for line in out.read_text().splitlines()] == ["ok"]
