"""The trajectory as one PR comment, always under GitHub's 65,536-character limit; commands kept whole."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bot.agent.fences import action_spans
from bot.jobs import RunInfo
from bot.render import render

BUDGET = 60_000  # under 65,536 with room for GitHub's own accounting of multi-byte characters
MIN_OUTPUT = 240
NOTE_ROOM = 400  # the shortening note, added after the search


@dataclass(frozen=True)
class Step:
    """One agent step as shown on GitHub."""

    n: int
    thought: str
    command: str | None
    output: str | None
    returncode: int | None = None
    kind: str = "action"
    elided: str = ""


def steps_from_messages(messages: list[dict[str, Any]]) -> list[Step]:
    """Pair each assistant reply with the observation that followed it (mini-swe-agent's message shapes)."""
    steps: list[Step] = []
    pending: dict[str, Any] | None = None
    calling: dict[str, Any] | None = None  # the last reply with tool calls: each `tool` message is one of its steps
    for message in messages:
        role, extra = message.get("role"), message.get("extra") or {}
        if role == "assistant":
            if pending is not None:
                steps.append(_step(len(steps) + 1, pending, None))
            pending, calling = message, message if message.get("tool_calls") else None
        elif role == "tool" and calling is not None:
            steps.append(_step(len(steps) + 1, calling, message, call_id=message.get("tool_call_id")))
            pending = None
        elif role == "user" and pending is not None:
            steps.append(_step(len(steps) + 1, pending, message))
            pending = None
        elif role == "exit" and pending is not None:
            steps.append(_step(len(steps) + 1, pending, None, kind=str(extra.get("exit_status", "exit"))))
            pending = None
    if pending is not None:
        steps.append(_step(len(steps) + 1, pending, None))
    return steps


def _step(
    n: int, reply: dict[str, Any], observation: dict[str, Any] | None, kind: str = "action", call_id: Any = None
) -> Step:
    content = _text(reply.get("content"))
    actions = (reply.get("extra") or {}).get("actions") or []
    actions = [a for a in actions if a.get("tool_call_id") == call_id] if call_id else actions
    spans = action_spans(content)
    command = str(actions[0].get("command")) if actions else (spans[0][2] if spans else None)
    thought = _without(content, spans).strip()
    if observation is None:
        return Step(n, thought, command, None, kind=kind)
    obs_extra = observation.get("extra") or {}
    if obs_extra.get("interrupt_type") == "FormatError":
        return Step(n, thought, None, _text(observation.get("content")), kind="format error")
    output = obs_extra.get("raw_output", _text(observation.get("content")))
    code = obs_extra.get("returncode")
    return Step(n, thought, command, str(output), int(code) if code is not None else None)


def _text(content: Any) -> str:
    if isinstance(content, list):  # multimodal content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def elide_middle(text: str, keep: int) -> tuple[str, int]:
    """`text` with its middle replaced by a marker, about `keep` characters left; and how many went."""
    if len(text) <= keep:
        return text, 0
    head, tail = keep * 2 // 3, keep // 3
    gone = len(text) - head - tail
    return f"{text[:head]}\n[… {gone:,} characters elided …]\n{text[len(text) - tail :]}", gone


def render_trajectory(
    steps: list[Step], *, run: RunInfo, exit_status: str, run_link: str | None, budget: int = BUDGET
) -> str:
    """The trajectory comment, shortened as needed: long outputs' middles, older outputs, then thoughts."""
    stored = f"runs/{run['run_id']}/trajectory.json in the worker's data dir"
    where = f"Full trajectory: {run_link or stored}."

    def draw(shown: list[Step], notes: list[str]) -> str:
        return render("trajectory_comment.md", steps=shown, notes=[*notes, where], run=run, exit_status=exit_status)

    def fits(shown: list[Step]) -> bool:
        return len(draw(shown, [])) <= budget - NOTE_ROOM

    body = draw(steps, [])
    if len(body) <= budget:
        return body
    for shrink in (_cap_outputs, _drop_old_outputs, _drop_thoughts, _cap_commands):
        steps, note = shrink(steps, fits)
        body = draw(steps, [note])
        if len(body) <= budget:
            return body
    return body[:budget]


def _largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest value in [low, high] for which `fits` holds (assumed monotone), or `low`."""
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def _cap_outputs(steps: list[Step], fits: Callable[[list[Step]], bool]) -> tuple[list[Step], str]:
    def capped(keep: int) -> list[Step]:
        out = []
        for s in steps:
            if s.output is None:
                out.append(s)
                continue
            text, gone = elide_middle(s.output, keep)
            out.append(replace(s, output=text, elided=f"{gone:,} characters elided" if gone else s.elided))
        return out

    longest = max((len(s.output or "") for s in steps), default=0)
    keep = _largest_fitting(MIN_OUTPUT, max(MIN_OUTPUT, longest), lambda k: fits(capped(k)))
    shown = capped(keep)
    count = sum(1 for s in shown if s.elided)
    return shown, f"The middle of {count} long outputs was elided (each kept to about {keep:,} characters)."


def _drop_old_outputs(steps: list[Step], fits: Callable[[list[Step]], bool]) -> tuple[list[Step], str]:
    def dropped(k: int) -> list[Step]:
        return [
            replace(s, output=None, elided="omitted") if i < k and s.output is not None else s
            for i, s in enumerate(steps)
        ]

    k = len(steps) - _largest_fitting(0, len(steps), lambda kept: fits(dropped(len(steps) - kept)))
    return dropped(k), f"Outputs of the first {k} steps were omitted; later ones have their middles elided."


def _drop_thoughts(steps: list[Step], fits: Callable[[list[Step]], bool]) -> tuple[list[Step], str]:
    shown = [replace(s, thought="", output=None, elided="omitted" if s.output is not None else s.elided) for s in steps]
    return shown, "All outputs and the agent's thoughts were omitted; every command is shown."


def _cap_commands(steps: list[Step], fits: Callable[[list[Step]], bool]) -> tuple[list[Step], str]:
    # Only reached when the commands alone exceed a comment: keep each command's start and end.
    keep = _largest_fitting(
        80,
        20_000,
        lambda k: fits([replace(s, command=elide_middle(s.command, k)[0]) if s.command else s for s in steps]),
    )
    shown = [replace(s, command=elide_middle(s.command, keep)[0]) if s.command else s for s in steps]
    return shown, "Commands were too long for one comment: the middle of the longest ones was elided."


def _without(content: str, spans: list[tuple[int, int, str]]) -> str:
    """`content` with the action blocks cut out (what the reply said around its command)."""
    kept, last = [], 0
    for start, end, _ in spans:
        kept.append(content[last:start])
        last = end
    return "".join(kept) + content[last:]
