"""The checks an agent ran, as its trajectory shows them: test-like commands and their return codes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.pipeline.attempts.missing import missing_tool
from bot.pipeline.publish.transcript import Step
from bot.render import untrusted

# Commands that look like a test run (or a checker), wherever they appear in the command line.
_CHECK = re.compile(
    r"(?<![\w./-])(?:python[\d.]*\s+-m\s+(?:pytest|unittest)|py\.test|pytest|tox|nox|"
    r"(?:npm|yarn|pnpm)\s+(?:run\s+)?test(?:[:-][\w:-]+)?|node\s+(?:--test|\S*test\S*\.[cm]?[jt]s)|"
    r"go\s+test|cargo\s+test|make\s+(?:test|check)|"
    r"mvn\s+(?:-\S+\s+)*test|gradle\w*\s+test|ctest|rspec|phpunit|jest|mocha|"
    r"ruff\s+check|mypy|flake8)(?![\w.-])"
)
# After the check, anything that runs another command regardless (pipe, `;`, `||`, `&`, newline) hides its code.
_MASKED = re.compile(r"\||;|\n|(?<![>&<])&(?![&>])")
# A heredoc's body is data (a file being written, the submission's summary), not commands: left out of the match.
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w{0,40})\1")
MAX_SUMMARY = 3_000
MAX_CHECKS = 20


@dataclass(frozen=True)
class Check:
    """One test-like command the agent ran and what it returned."""

    step: int
    command: str
    returncode: int | None
    verdict: str  # passed, failed, unknown, missing (exit 127/126: the tool is not in the image, nothing ran)
    last_line: str
    missing_tool: str | None = None


def checks_from_steps(steps: list[Step]) -> list[Check]:
    """Test-like commands in the order they ran; `passed` only when the test's own exit code was 0."""
    found = []
    for step in steps:
        if step.command is None:
            continue
        command = without_heredocs(step.command)
        match = _CHECK.search(command)
        if match is None:
            continue
        masked = _MASKED.search(command, match.end()) is not None
        verdict = _verdict(step.returncode, masked)
        tool = None if masked else missing_tool(step.returncode, step.output or "", command[match.start() :])
        if tool:
            verdict = "missing"
        found.append(Check(step.n, step.command, step.returncode, verdict, _last(step), tool))
    return found[-MAX_CHECKS:]


def without_heredocs(command: str) -> str:
    """The command line with each heredoc's body (up to its delimiter line, or the end) left out."""
    lines, kept, delimiter = command.split("\n"), [], None
    for line in lines:
        if delimiter is not None:
            if line.strip() == delimiter:
                delimiter = None
            continue
        kept.append(line)
        if opened := _HEREDOC.search(line):
            delimiter = opened.group(2)
    return "\n".join(kept)


def _verdict(code: int | None, masked: bool) -> str:
    if code is None or (masked and code == 0):
        return "unknown"  # a pipe or `;` after the test makes a 0 the last command's, not the test's
    return "passed" if code == 0 else "failed"


def _last(step: Step) -> str:
    lines = [line for line in (step.output or "").splitlines() if line.strip()]
    return lines[-1].strip()[:160] if lines else ""


def untrusted_summary(text: str, limit: int = MAX_SUMMARY) -> str:
    """The agent's own summary, made safe for a PR body: no @mentions, no `Fixes #N` that closes issues, capped."""
    text = untrusted(text.strip(), limit * 2)
    return text if len(text) <= limit else text[: limit - 1] + "…"
