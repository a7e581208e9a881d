"""An eval's output directory: results as they finish (for resuming), report.json, predictions.jsonl."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from bot.eval.tasks import EvalTask
from bot.trajectory import write_atomic

RESULTS = "results.jsonl"
REPORT = "report.json"
PREDICTIONS = "predictions.jsonl"
RUN = "run.json"


class OutputInUse(Exception):
    """The output directory holds another model's or config's results."""


def config_digest(config: dict[str, Any]) -> str:
    """A short, stable digest of a config (the same config always gives the same digest)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


class ResultStore:
    """One record per finished task in `results.jsonl`, appended as each finishes, so a rerun skips it."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self._lock = threading.Lock()

    def claim(self, identity: dict[str, Any]) -> None:
        """Record which model and config write here; refuse a directory that holds another's results."""
        self.output.mkdir(parents=True, exist_ok=True)
        path = self.output / RUN
        if path.exists():
            held = json.loads(path.read_text(encoding="utf-8"))
            if {k: held.get(k) for k in identity} != identity:
                raise OutputInUse(
                    f"{self.output} holds results of {held.get('model')} (config {held.get('config_digest')}): "
                    "choose another --output to compare a different model or config"
                )
            return
        write_atomic(path, json.dumps(identity, indent=2) + "\n")

    def finished(self) -> dict[str, dict[str, Any]]:
        """Records of the tasks already finished, by instance id (a torn last line is ignored)."""
        path = self.output / RESULTS
        records: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                records[record["instance_id"]] = record
        return records

    def add(self, record: dict[str, Any]) -> None:
        """Append one finished task's record."""
        line = json.dumps(record) + "\n"
        with self._lock, (self.output / RESULTS).open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def write_report(self, tasks: list[EvalTask], model: str, bad_lines: list[tuple[str, str]]) -> dict[str, Any]:
        """report.json and predictions.jsonl from every finished task, in the tasks file's order."""
        done = self.finished()
        records = [done[t.instance_id] for t in tasks if t.instance_id in done]
        report = {
            "model": model,
            "resolved": sum(1 for r in records if r.get("resolved")),
            "total": len(tasks),
            "finished": len(records),
            "errors": sum(1 for r in records if r.get("error") and r.get("exit_status") == "error"),
            "invalid_lines": [{"where": w, "error": e} for w, e in bad_lines],
            "tasks": [{k: v for k, v in r.items() if k != "model_patch"} for r in records],
        }
        if any("attempts" in r for r in records):
            report["any_resolved"] = sum(1 for r in records if r.get("any_resolved"))
            report["reproduction_valid"] = sum(1 for r in records if _valid_reproduction(r))
        write_atomic(self.output / REPORT, json.dumps(report, indent=2) + "\n")
        predictions = (
            json.dumps({"instance_id": r["instance_id"], "model_name_or_path": model, "model_patch": r["model_patch"]})
            for r in records
        )
        write_atomic(self.output / PREDICTIONS, "".join(p + "\n" for p in predictions))
        return report


def _valid_reproduction(record: dict[str, Any]) -> bool:
    """Whether some attempt of the task left a reproduction test the App saw fail before and pass after."""
    return any((a.get("reproduction") or {}).get("valid") for a in record.get("attempts", []))
