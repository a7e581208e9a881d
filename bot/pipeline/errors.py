"""The pipeline's errors, in one home: how a step says it cannot go on."""

from __future__ import annotations

from bot.jobs import Outcome


class RunFailed(Exception):
    """A step could not go on; `outcome` says how the run ends, `detail` is safe to show."""

    def __init__(self, outcome: Outcome, detail: str = "") -> None:
        super().__init__(f"{outcome}: {detail}" if detail else str(outcome))
        self.outcome, self.detail = Outcome(outcome), detail


class GitError(Exception):
    """A git command failed; the message never holds the token or the command line."""

    def __init__(self, message: str, *, transient: bool = False, retries: int = 0) -> None:
        super().__init__(message)
        self.transient, self.retries = transient, retries


class LeaseRejected(GitError):
    """The branch moved since the job started: the push was refused rather than overwrite someone's commits."""


class ChangeTooLarge(Exception):
    """The exported tree changes more files or bytes than the caps allow; the message says which and how much."""


class SetupFailed(Exception):
    """A sandbox for testing could not be made ready; the message says why."""
