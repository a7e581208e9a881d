"""The checks an agent ran, as its trajectory shows them: test-like commands and their return codes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.pipeline.transcript import Step
from bot.render import untrusted

# Commands that look like a test run (or a checker), wherever they appear in the command line.
_CHECK = re.compile(
    r"(?<![\w./-])(?:python[\d.]*\s+-m\s+(?:pytest|unittest)|py\.test|pytest|tox|nox|"
    r"(?:npm|yarn|pnpm)\s+(?:run\s+)?test|go\s+test|cargo\s+test|make\s+(?:test|check)|"
    r"mvn\s+(?:-\S+\s+)*test|gradle\w*\s+test|ctest|rspec|phpunit|jest|mocha|"
    r"ruff\s+check|mypy|flake8)(?![\w.-])"
)
# After the check, anything that runs another command regardless (pipe, `;`, `||`, `&`, newline) hides its code.
_MASKED = re.compile(r"\||;|\n|(?<![>&<])&(?![&>])")
MAX_SUMMARY = 3_000
MAX_CHECKS = 20


@dataclass(frozen=True)
class Check:
    """One test-like command the agent ran and what it returned."""

    step: int
    command: str
    returncode: int | None
    verdict: str  # passed, failed, unknown
    last_line: str


def checks_from_steps(steps: list[Step]) -> list[Check]:
    """Test-like commands in the order they ran; `passed` only when the test's own exit code was 0."""
    found = []
    for step in steps:
        match = _CHECK.search(step.command or "")
        if step.command is None or match is None:
            continue
        masked = _MASKED.search(step.command, match.end()) is not None
        found.append(Check(step.n, step.command, step.returncode, _verdict(step.returncode, masked), _last(step)))
    return found[-MAX_CHECKS:]


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
