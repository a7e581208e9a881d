"""Trajectory files for viewer tests: written by the real TrajectoryWriter, in mini-swe-agent's message shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.trajectory import RunStats, TrajectoryWriter


def step_messages(
    command: str, output: str, returncode: int = 0, thought: str = "THOUGHT: look."
) -> list[dict[str, Any]]:
    """One assistant reply running `command` and the observation that followed."""
    reply = f"{thought}\n\n```mswea_bash_command\n{command}\n```"
    observation = f"<returncode>{returncode}</returncode>\n<output>\n{output}</output>"
    return [
        {"role": "assistant", "content": reply, "extra": {"actions": [{"command": command}]}},
        {"role": "user", "content": observation, "extra": {"raw_output": output, "returncode": returncode}},
    ]


def write_run(
    data_dir: Path, run_id: str, steps: list[tuple[str, str, int]], *, job_id: str = "job1", repo: str = "acme/widgets"
) -> Path:
    """A finished run's trajectory at <data_dir>/runs/<run_id>/trajectory.json; returns its path."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix issue #3: add() subtracts"},
    ]
    for command, output, code in steps:
        messages += step_messages(command, output, code)
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": "diff"}})
    path = data_dir / "runs" / run_id / "trajectory.json"
    writer = TrajectoryWriter(path, mini_fix={"repo": repo, "issue": 3, "run_id": run_id, "job_id": job_id})
    stats = RunStats(api_calls=len(steps), prompt_tokens=1200, completion_tokens=80, elapsed_seconds=42.5)
    writer.save(messages, config={}, stats=stats)
    return path
