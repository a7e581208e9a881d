"""`mini-fix show OUT`: a finished `mini-fix run` read back as a reviewer reads the PR — the steps, the patch, the
App's own checks of the change, and plainly whether it is a fix the tests back.

Everything comes from the run's output directory (trajectory.json with the App's verdicts in its `mini_fix` block,
patch.diff, attempts.md); nothing is run. The files are the App's own, but their text is the model's and the
sandbox's: it is printed, capped, never interpreted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bot.pipeline.publish.transcript import Step, elide_middle, steps_from_messages

OUTPUT_SHOWN = 600  # characters of each step's output
THOUGHT_SHOWN = 300
PATCH_SHOWN = 20_000


def show(output: Path, *, steps: bool = True, out: Any = None) -> int:
    """Print the run in `output`; 0 when the chosen change's checks pass, 1 otherwise, 2 when nothing is there."""
    out = out or sys.stdout
    trajectory_file = output / "trajectory.json"
    try:
        trajectory = json.loads(trajectory_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"mini-fix show: no {trajectory_file}: give the --output directory of a `mini-fix run`", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"mini-fix show: {trajectory_file} cannot be read as a trajectory: {exc}", file=sys.stderr)
        return 2
    messages = trajectory.get("messages") if isinstance(trajectory, dict) else None
    if not isinstance(messages, list):
        print(f"mini-fix show: {trajectory_file} has no `messages` list", file=sys.stderr)
        return 2
    if steps:
        _print_steps(steps_from_messages(messages), out)
    patch_file = output / "patch.diff"
    patch = patch_file.read_text(encoding="utf-8", errors="replace") if patch_file.is_file() else ""
    print("\n=== the change (patch.diff)", file=out)
    print(elide_middle(patch, PATCH_SHOWN)[0] if patch.strip() else "(no change)", file=out)
    attempts = output / "attempts.md"
    if attempts.is_file():
        print("\n=== the attempts (attempts.md)", file=out)
        print(attempts.read_text(encoding="utf-8", errors="replace"), file=out)
    info = trajectory.get("info") or {}
    verdicts = trajectory.get("mini_fix") or {}
    lines, fixed = verdict_lines(info, verdicts, bool(patch.strip()))
    print("\n=== verdict", file=out)
    for line in lines:
        print(line, file=out)
    return 0 if fixed else 1


def _print_steps(steps: list[Step], out: Any) -> None:
    if not steps:
        print(
            "\n--- no command ran: no reply held exactly one command (a small model often breaks the format)", file=out
        )
    for step in steps:
        code = "" if step.returncode is None else f", exit {step.returncode}"
        print(f"\n--- step {step.n} ({step.kind}{code})", file=out)
        if step.thought:
            print(elide_middle(step.thought.strip(), THOUGHT_SHOWN)[0], file=out)
        if step.command:
            print(f"$ {step.command}", file=out)
        if step.output:
            print(elide_middle(step.output.rstrip(), OUTPUT_SHOWN)[0], file=out)


def verdict_lines(info: dict[str, Any], verdicts: dict[str, Any], changed: bool) -> tuple[list[str], bool]:
    """The verdict in a reviewer's words, and whether the run produced a change its checks back."""
    stats = info.get("model_stats") or {}
    lines = [f"agent: {info.get('exit_status', 'unknown')} after {stats.get('api_calls', '?')} model calls"]
    test = verdicts.get("test") if isinstance(verdicts.get("test"), dict) else None
    reproduction = verdicts.get("reproduction") if isinstance(verdicts.get("reproduction"), dict) else None
    lines.append(_test_line(test))
    lines.append(_reproduction_line(reproduction))
    dropped = verdicts.get("dropped_tests") or {}
    if isinstance(dropped, dict) and dropped.get("tests"):
        lines.append(f"drops existing tests: {', '.join(map(str, dropped['tests']))}")
    elif isinstance(dropped, dict) and dropped.get("uncertain"):
        lines.append(f"whether it drops tests cannot be told: gone are {', '.join(map(str, dropped['uncertain']))}")
    if verdicts.get("refused"):
        lines.append(f"refused paths: {', '.join(map(str, verdicts['refused']))}")
    passed = bool(test and test.get("passed")) and not (isinstance(dropped, dict) and dropped.get("tests"))
    fixed = changed and passed and (reproduction is None or bool(reproduction.get("valid")))
    if not changed:
        lines.append("RESULT: no change was proposed")
    elif fixed and reproduction is not None:
        lines.append("RESULT: fixed — the new test fails before the change and passes after it, and the tests pass")
    elif fixed:
        lines.append("RESULT: the repository's tests pass with the change (no test of the bug itself was added)")
    else:
        lines.append("RESULT: not shown to be a fix — read the checks above before using this change")
    return lines, fixed


def _test_line(test: dict[str, Any] | None) -> str:
    if test is None:
        return "repository's tests: not run (no test command, or the run was stopped)"
    command = test.get("command") or "?"
    if test.get("missing_tool"):
        return f"repository's tests (`{command}`): could not run: `{test['missing_tool']}` is missing"
    verdict = test.get("verdict")
    if verdict == "could not run":
        return f"repository's tests (`{command}`): could not run the tests: {test.get('summary') or 'unknown'}"
    status = {"passed": "pass", "no tests ran": "NO TESTS RAN"}.get(str(verdict), "")
    status = status or ("pass" if test.get("passed") else f"FAIL (exit {test.get('returncode')})")
    summary = f" — {test['summary']}" if test.get("summary") else ""
    return f"repository's tests after the change (`{command}`): {status}{summary}"


def _reproduction_line(reproduction: dict[str, Any] | None) -> str:
    if reproduction is None:
        return "test of the bug: none added by the agent"
    files = ", ".join(map(str, reproduction.get("files") or [])) or "none"
    if reproduction.get("detail") and reproduction.get("fails_before") is None:
        return f"test of the bug ({files}): not checked — {reproduction['detail']}"
    before = {True: "fails", False: "passes"}.get(reproduction.get("fails_before"), "not run")  # type: ignore[arg-type]
    after = {True: "passes", False: "FAILS"}.get(reproduction.get("passes_after"), "not run")  # type: ignore[arg-type]
    return f"test of the bug ({files}): before the change {before}, after it {after}"
