"""How a step of the pipeline says it cannot go on (the worker's git has its own one error, `gitops.GitError`)."""

from __future__ import annotations

from bot.jobs import Outcome


class RunFailed(Exception):
    """A step could not go on; `outcome` says how the run ends, `detail` is safe to show."""

    def __init__(self, outcome: Outcome, detail: str = "") -> None:
        super().__init__(f"{outcome}: {detail}" if detail else str(outcome))
        self.outcome, self.detail = Outcome(outcome), detail


class ChangeTooLarge(Exception):
    """The exported tree changes more files or bytes than the caps allow; the message says which and how much."""


class SetupFailed(Exception):
    """A sandbox for testing could not be made ready; the message says why."""
