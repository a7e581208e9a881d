"""The table bench/quality.py prints: per system resolved, tokens per resolved task, tokens per step, steps, format
errors and wall time, and mini-fix's ratios to mini-swe-agent's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def totals(rows: list[dict[str, Any]]) -> dict[str, float]:
    """One system's sums and ratios over its rows."""
    tokens = sum(r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in rows)
    steps = sum(r.get("steps", 0) or 0 for r in rows)
    resolved = sum(1 for r in rows if r["resolved"])
    return {
        "tasks": len(rows),
        "resolved": resolved,
        "tokens": tokens,
        "steps": steps,
        "tokens_per_step": tokens / steps if steps else 0.0,
        "tokens_per_resolved": tokens / resolved if resolved else float("inf"),
        "format_errors": sum(r.get("format_errors", 0) for r in rows),
        "first_prompt": sum(r.get("first_prompt_tokens", 0) for r in rows) / len(rows) if rows else 0.0,
        "wall": sum(r.get("wall_seconds", 0) for r in rows),
    }


def report(*paths: Path) -> str:
    """The Markdown table of one or more results.jsonl files (e.g. a mini-fix config run later against the same
    mini-swe-agent rows), systems compared only on the tasks all of them ran."""
    rows = [row for path in paths for row in load(path)]
    by_system: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_system.setdefault(row["system"], {})[row["task"]] = row
    common = set.intersection(*(set(t) for t in by_system.values())) if by_system else set()
    lines = [
        f"tasks every system ran: {len(common)}",
        "",
        "| system | resolved | tokens / resolved | tokens / step | steps | format errors | first prompt | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    sums = {}
    for system, tasks in sorted(by_system.items()):
        t = sums[system] = totals([tasks[name] for name in sorted(common)])
        per_resolved = "—" if t["tokens_per_resolved"] == float("inf") else f"{t['tokens_per_resolved']:,.0f}"
        lines.append(
            f"| {system} | {t['resolved']}/{t['tasks']} | {per_resolved} | {t['tokens_per_step']:,.0f} | "
            f"{t['steps']:.0f} | {t['format_errors']:.0f} | {t['first_prompt']:,.0f} | {t['wall']:,.0f} |"
        )
    theirs = sums.get("mini-swe-agent")
    for system in sorted(s for s in sums if s.startswith("mini-fix")):
        if theirs and theirs["tokens_per_step"]:
            ratio = sums[system]["tokens_per_step"] / theirs["tokens_per_step"]
            lines.append(f"\n{system} / mini-swe-agent tokens per step: {ratio:.2f}×")
    lines.append("\n| task | " + " | ".join(sorted(by_system)) + " |")
    lines.append("|---|" + "---|" * len(by_system))
    for name in sorted(common):
        cells = []
        for system in sorted(by_system):
            r = by_system[system][name]
            mark = "✔" if r["resolved"] else "✘"
            tokens = r.get("prompt_tokens", 0) + r.get("completion_tokens", 0)
            cells.append(f"{mark} {r.get('steps', 0)} steps, {tokens:,} tok, {r['exit_status'][:40]}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
