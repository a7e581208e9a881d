"""`mini-fix eval compare A B`: per-task flips between two reports, and the totals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load_report(path: Path) -> dict[str, Any]:
    """A report.json, given the file or the eval's output directory."""
    file = path / "report.json" if path.is_dir() else path
    data: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    return data


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Tasks that flipped (fixed: unresolved in A, resolved in B; broken: the other way), and each side's totals."""
    left = {t["instance_id"]: bool(t.get("resolved")) for t in a.get("tasks", [])}
    right = {t["instance_id"]: bool(t.get("resolved")) for t in b.get("tasks", [])}
    both = [i for i in left if i in right]
    return {
        "a": {"model": a.get("model"), "resolved": a.get("resolved"), "total": a.get("total")},
        "b": {"model": b.get("model"), "resolved": b.get("resolved"), "total": b.get("total")},
        "common": len(both),
        "fixed": [i for i in both if not left[i] and right[i]],
        "broken": [i for i in both if left[i] and not right[i]],
        "only_a": sorted(set(left) - set(right)),
        "only_b": sorted(set(right) - set(left)),
    }


def render_comparison(diff: dict[str, Any]) -> str:
    """The comparison as text for a terminal."""
    a, b = diff["a"], diff["b"]
    lines = [
        f"A: {a['model']}: resolved {a['resolved']}/{a['total']}",
        f"B: {b['model']}: resolved {b['resolved']}/{b['total']}",
        f"{diff['common']} task(s) in both: {len(diff['fixed'])} fixed in B, {len(diff['broken'])} broken in B",
    ]
    lines += [f"  + {i}" for i in diff["fixed"]] + [f"  - {i}" for i in diff["broken"]]
    if diff["only_a"] or diff["only_b"]:
        lines.append(f"only in A: {len(diff['only_a'])}, only in B: {len(diff['only_b'])}")
    return "\n".join(lines)
