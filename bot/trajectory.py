"""Trajectory files in mini-swe-agent's format (`mini-swe-agent-1.1`) plus our `mini_fix` block, redacted."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import structlog

from bot import metrics
from bot.redaction import REDACTED

TRAJECTORY_FORMAT = "mini-swe-agent-1.1"
Messages = list[dict[str, Any]]
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RunStats:
    """The counters a trajectory reports."""

    api_calls: int = 0
    cost: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_seconds: float = 0.0


class TrajectoryWriter:
    """Writes one run's trajectory file, atomically, every time `save` is called."""

    def __init__(
        self,
        path: Path,
        *,
        secrets: Sequence[str] = (),
        mini_fix: dict[str, Any] | None = None,
        mirror: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.mirror = mirror  # also given each saved text (the database every API replica reads)
        self.secrets = list(secrets)
        self.mini_fix = dict(mini_fix or {})
        self.started_at = _now()
        self.write_failed = False  # the last save could not be written locally (the run went on)

    def serialize(self, messages: Messages, *, config: dict[str, Any], stats: RunStats) -> dict[str, Any]:
        """The trajectory as a JSON-ready dict, secrets already replaced by `***`."""
        redacted: dict[str, Any] = redact(self._build(messages, config, stats), self.secrets)
        return redacted

    def _build(self, messages: Messages, config: dict[str, Any], stats: RunStats) -> dict[str, Any]:
        last_extra = messages[-1].get("extra", {}) if messages else {}
        finished = bool(messages) and messages[-1].get("role") == "exit"
        data = {
            "info": {
                "model_stats": {"instance_cost": stats.cost, "api_calls": stats.api_calls},
                "config": config,
                "mini_version": _version(),
                "exit_status": last_extra.get("exit_status", ""),
                "submission": last_extra.get("submission", ""),
            },
            "messages": messages,
            "trajectory_format": TRAJECTORY_FORMAT,
            "mini_fix": {
                **self.mini_fix,
                "started_at": self.started_at,
                "finished_at": _now() if finished else None,
                "elapsed_seconds": round(stats.elapsed_seconds, 3),
                "steps": stats.api_calls,
                "prompt_tokens": stats.prompt_tokens,
                "completion_tokens": stats.completion_tokens,
                "total_tokens": stats.prompt_tokens + stats.completion_tokens,
            },
        }
        return data

    def save(self, messages: Messages, *, config: dict[str, Any], stats: RunStats) -> dict[str, Any]:
        """Serialize, then replace the file atomically (readers never see half a file); return the data."""
        data = self._build(messages, config, stats)
        # No indent: json's C encoder only serves compact output, and the file is rewritten at every step.
        text = json.dumps(data, default=str)
        # A string holding a secret serializes to text holding the secret's escaped form, so the full walk
        # is needed only when that form shows up.
        if any(json.dumps(secret)[1:-1] in text for secret in self.secrets):
            data = redact(data, self.secrets)
            text = json.dumps(data, default=str)
        self._write(text)
        self._mirror(text)
        return data

    def _write(self, text: str) -> None:
        """Replace the local file; a full or failing disk is logged and counted, never the end of the run."""
        try:
            write_atomic(self.path, text)
        except OSError as exc:
            metrics.TRAJECTORY_WRITE_FAILURES.inc()
            if not self.write_failed:  # one line when saving starts failing, not one per step
                log.warning("trajectory_not_written", path=str(self.path), error=str(exc), detail="the run goes on")
            self.write_failed = True
            return
        if self.write_failed:
            log.info("trajectory_written_again", path=str(self.path))
        self.write_failed = False

    def _mirror(self, text: str) -> None:
        if self.mirror is None:
            return
        try:
            self.mirror(text)
        except Exception:  # the database is down: the run goes on, the local file has every step
            log.warning("trajectory not stored in the database this step", path=str(self.path), exc_info=True)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` so readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def annotate_trajectory(path: Path, key: str, value: Any) -> None:
    """Set `mini_fix[key]` in a saved trajectory (what was learnt after the agent: a test result, a verdict)."""
    if not path.exists():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("mini_fix", {})[key] = value
    write_atomic(path, json.dumps(data, default=str))


def redact(value: Any, secrets: Sequence[str]) -> Any:
    """A copy of `value` with every secret replaced by `***` in every string, dict keys included."""
    # Longest first, so a secret that contains another is replaced whole.
    return _redact(value, sorted({s for s in secrets if s}, key=len, reverse=True))


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {_redact(k, secrets): _redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact(v, secrets) for v in value]
    return value


def load_trajectory(path: Path) -> dict[str, Any]:
    """Read a trajectory file; raises ValueError if it is not one."""
    return parse_trajectory(path.read_text(encoding="utf-8"), str(path))


def parse_trajectory(text: str, where: str = "trajectory") -> dict[str, Any]:
    """A trajectory's JSON text as a dict; raises ValueError if it is not one."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ValueError(f"{where} is not a trajectory file (no messages list)")
    return data


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@functools.cache
def _version() -> str:

    try:
        return f"mini-fix {version('mini-fix')}"
    except PackageNotFoundError:
        return "mini-fix"
