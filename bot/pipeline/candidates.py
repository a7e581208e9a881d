"""Several attempts at one job: what each produced, what the App itself found when it tested it, and the choice.

Everything here is decided on the worker from data it took out and checked itself: the change is the host's own
diff (`change.py`), test and reproduction verdicts are exit codes of fresh sandboxes the agent never touched, read
together with the runner's own summary (`testrun.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bot.pipeline.change import Change
from bot.pipeline.git import diffpaths
from bot.repo_config.schema import RepoConfig


@dataclass
class Reproduction:
    """An attempt's reproduction test, run by the App: it must fail on the base commit and pass with the fix."""

    files: list[str]  # the attempt's new or changed test files, from the host's own diff
    fails_before: bool | None = None  # base commit + only these files; None = not run
    passes_after: bool | None = None  # base commit + the attempt's whole change
    detail: str = ""  # why it was not run (or not fully), in a reviewer's words; "" when both runs happened
    command: str = ""  # the reproduce command as run (with the files), "" when there is none
    before: str = ""  # the tail of its output on the base commit + only the test files
    after: str = ""  # the tail of its output on the base commit + the whole change
    before_verdict: str = ""  # what the host read from the run on the base commit (`testrun.Reading.text`)
    after_verdict: str = ""  # ... and from the run with the whole change

    @property
    def valid(self) -> bool:
        """Fails before the fix and passes after it, both seen by the App."""
        return self.fails_before is True and self.passes_after is True


@dataclass
class DroppedTests:
    """Existing tests a change removes or empties, found by the App in its own trees (Python, Go, Rust, Java, JS)."""

    tests: list[str] = field(default_factory=list)  # `path::Class::test_x` at the base commit, gone after the change
    unparsed: list[str] = field(default_factory=list)  # unreadable on one side (or over the scan caps): cannot tell
    unchecked: list[str] = field(default_factory=list)  # changed test files in another language: not checked
    uncertain: list[str] = field(default_factory=list)  # `path::declaration` gone that no scanner names: cannot tell


@dataclass(frozen=True)
class Verdict:
    """What the App found when it checked one candidate in fresh sandboxes (`verify.py`)."""

    test: dict[str, Any] | None = None  # the repository's test command on its change
    reproduction: Reproduction | None = None
    dropped: DroppedTests | None = None  # None: not checked (its change did not apply)
    cross: Mapping[int, bool] = field(default_factory=dict)  # other attempt's valid reproduction -> passes here


@dataclass
class Candidate:
    """One attempt: its own sandbox, sampling settings, trajectory and change."""

    index: int  # 1-based attempt number, the fixed tie-break
    run_id: str  # the attempt's own run id (its trajectory in the viewer)
    temperature: float | None = None
    exit_status: str = ""
    change: Change | None = None  # None: nothing submitted, or no change could be taken out
    refused: list[str] = field(default_factory=list)  # protected paths, links, secrets: not acceptable
    test: dict[str, Any] | None = None  # the repository's test command on this change, in a fresh sandbox
    reproduction: Reproduction | None = None
    dropped: DroppedTests | None = None  # None: not checked (not verified, or its change did not apply)
    cross: dict[int, bool] = field(default_factory=dict)  # other attempt's valid reproduction -> passes here
    steps: int = 0
    tokens: int = 0
    seconds: float = 0.0
    error: str = ""  # how the attempt ended when it did not submit (the outcome's detail)
    partial: Change | None = None  # what it left when a step, token or time limit ended it (keep_partial_work)
    budget_end: str = ""  # the job budget or quota that stopped it (the host's own reason), when its partial is kept

    def judged(self, verdict: Verdict | None) -> Candidate:
        """A copy with the App's verdict (None: not verified, the copy is the same); this one is left as it was."""
        if verdict is None:
            return replace(self)
        return replace(
            self,
            test=verdict.test,
            reproduction=verdict.reproduction,
            dropped=verdict.dropped,
            cross=dict(verdict.cross),
        )

    @property
    def submitted(self) -> bool:
        """The agent submitted and left a non-empty change."""
        return self.change is not None and bool(self.change.diff.strip())

    @property
    def acceptable(self) -> bool:
        """Submitted, and nothing in its change is refused."""
        return self.submitted and not self.refused

    @property
    def drops_tests(self) -> bool:
        """Its change removes test functions or methods that exist at the base commit."""
        return self.dropped is not None and bool(self.dropped.tests)

    @property
    def cannot_tell_drops(self) -> bool:
        """No test it certainly drops, but one the scanners could not name is gone, or a test file could not be
        read: whether it drops a test cannot be told."""
        d = self.dropped
        return d is not None and not d.tests and bool(d.uncertain or d.unparsed)

    @property
    def lines_changed(self) -> int:
        """Added plus removed lines of its diff."""
        if self.change is None:
            return 0
        return sum(
            1
            for line in self.change.diff.splitlines()
            if line.startswith(("+", "-")) and not line.startswith(("+++ ", "--- "))
        )


@dataclass
class Choice:
    """The selection's result: the chosen candidate (None: none acceptable) and a reason for every attempt."""

    chosen: Candidate | None
    ranking: list[Candidate]  # acceptable candidates, best first
    reasons: dict[int, str]  # attempt index -> why it was chosen or not, in words a reviewer reads


def refusals(change: Change, config: RepoConfig, secrets: list[str]) -> list[str]:
    """Why a change may not be published: protected paths, links the config does not allow, a worker's secret."""
    refused = diffpaths.protected(change.paths, config.protected_paths)
    if not config.allow_links:
        refused += change.links
    if any(secret in change.diff for secret in secrets if secret):
        refused.append("(a changed file holds one of the worker's secrets)")
    return refused
