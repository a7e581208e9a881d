"""`mini-fix export`: runs as OpenAI chat-format JSONL, `messages` exactly as the model saw them, plus metadata."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from bot.eval.scrub import scrub_messages
from bot.eval.store import config_digest
from bot.trajectory import load_trajectory

OUTCOMES = ("any", "merged", "resolved", "unresolved")


@dataclass
class ExportFilter:
    """Which runs to export."""

    outcome: str = "any"
    since: datetime | None = None
    repo: str | None = None
    clean: bool = False

    def keeps(self, meta: dict[str, Any]) -> bool:
        """Whether a run with this metadata is exported."""
        if meta.get("training") is False:
            return False  # the repository opted out (`training: false` in .github/mini-fix.yml)
        if self.repo and str(meta.get("repo", "")).casefold() != self.repo.casefold():
            return False
        if self.since and (started := _parse(meta.get("started_at"))) is not None and started < self.since:
            return False
        if self.clean and not meta["clean"]:
            return False
        return self.outcome == "any" or meta.get("outcome") == self.outcome


def chat_messages(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model saw and said, in order: the trajectory's messages, role and content only, no `exit`."""
    return [{"role": m["role"], "content": m["content"]} for m in trajectory["messages"] if m.get("role") != "exit"]


def run_flags(trajectory: dict[str, Any]) -> dict[str, Any]:
    """Counters --clean is defined by: format errors, actions that timed out or could not run, the exit status."""
    extras = [m.get("extra") or {} for m in trajectory["messages"]]
    return {
        "exit_status": trajectory.get("info", {}).get("exit_status", ""),
        "format_errors": sum(1 for e in extras if e.get("interrupt_type") == "FormatError"),
        "failed_actions": sum(1 for e in extras if e.get("exception_info")),
    }


def is_clean(flags: dict[str, Any], tests_passed: bool | None) -> bool:
    """Issue-free: submitted, no format error, no action that timed out or failed to run, tests passing."""
    return (
        flags["exit_status"] == "Submitted"
        and flags["format_errors"] == 0
        and flags["failed_actions"] == 0
        and tests_passed is True
    )


def metadata(trajectory: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A run's metadata: where it came from, the model and config, how it went, what happened to it."""
    mini_fix = trajectory.get("mini_fix", {})
    config = trajectory.get("info", {}).get("config", {})
    flags = run_flags(trajectory)
    meta = {
        "repo": mini_fix.get("repo"),
        "issue": mini_fix.get("issue"),
        "run_id": mini_fix.get("run_id"),
        "model": mini_fix.get("model") or config.get("model", {}).get("model_name"),
        "config_digest": config_digest(config),
        "steps": mini_fix.get("steps"),
        "tokens": mini_fix.get("total_tokens"),
        "started_at": mini_fix.get("started_at"),
        "training": mini_fix.get("training", True),
        **flags,
        **extra,
    }
    meta["clean"] = is_clean(flags, meta.get("tests_passed"))
    return meta


def eval_trajectories(dirs: Iterable[Path]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(trajectory, metadata) of each eval task in these output directories, labelled by its verdict."""
    for directory in dirs:
        for path in sorted(directory.glob("trajectories/*/*.traj.json")):
            trajectory = load_trajectory(path)
            verdict = trajectory.get("mini_fix", {}).get("eval", {})
            if "resolved" not in verdict:
                continue  # not graded (an interrupted eval): no label to export it with
            resolved = bool(verdict["resolved"])
            yield (
                trajectory,
                {
                    "source": "eval",
                    "instance_id": verdict.get("instance_id"),
                    "outcome": "resolved" if resolved else "unresolved",
                    "tests_passed": resolved,
                    "tests": verdict.get("tests", {}),
                },
            )


def write_export(
    runs: Iterable[tuple[dict[str, Any], dict[str, Any]]], keep: ExportFilter, secrets: list[str], out: TextIO
) -> tuple[int, int]:
    """Write each kept run as one JSON line; (lines written, credential-shaped strings redacted)."""
    written = redactions = 0
    for trajectory, extra in runs:
        meta = metadata(trajectory, extra)
        if not keep.keeps(meta):
            continue
        messages, caught = scrub_messages(chat_messages(trajectory), secrets)
        redactions += caught
        out.write(json.dumps({"messages": messages, "metadata": {**meta, "redactions": caught}}) + "\n")
        written += 1
    return written, redactions


def _parse(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None
