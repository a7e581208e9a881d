"""What one action's reply means: the ExecResult the agent sees, from a runner- or engine-shaped reply.

Both shapes are dicts with `output` (bytes, already capped), `size`, `truncated`, `timed_out`, `error` and
`returncode`; a timeout or an error becomes an observation, never an exception.
"""

from __future__ import annotations

from typing import Any

from sandbox.base import ExecResult

TRUNCATED = "\n[mini-fix: output truncated: kept the first {kept} of {seen} bytes]"


def as_result(reply: dict[str, Any], command: str, seconds: float) -> ExecResult:
    """An ExecResult from a runner- or engine-shaped reply (output as bytes, already capped)."""
    raw: bytes = reply["output"]
    output = raw.decode("utf-8", "replace")
    extra: dict[str, Any] = {}
    if reply["truncated"]:
        extra = {"truncated": True, "output_bytes": reply["size"]}
        output += TRUNCATED.format(kept=len(raw), seen=reply["size"])
    if reply["timed_out"]:
        info = (
            f"The command timed out after {seconds:g} seconds and was killed, with every process it started: {command}"
        )
        return ExecResult(output, -1, info, extra)
    if reply["error"]:
        return ExecResult(output, -1, f"The command could not be run: {reply['error']}", extra)
    return ExecResult(output, reply["returncode"], "", extra)
