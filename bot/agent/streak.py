"""The repeated-command guard's memory: the last command run, how it ended, and how many times in a row.

A model stuck in a loop sends the same command again and again and gets the same answer each time, whether that
answer is a failure or an exit 0 (a heredoc missing its closing line only makes bash warn). Re-running a test
command after an edit is the normal loop, not a stuck one: its output differs, or another command came between.
So a command counts as repeated only when it ran just before, unchanged, with the same output and exit code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sandbox.base import ExecResult


@dataclass(frozen=True)
class Streak:
    """`count` runs in a row of `command`, each with the same output (by digest) and exit code."""

    command: str
    digest: str
    returncode: int
    count: int

    @staticmethod
    def after(last: Streak | None, command: str, result: ExecResult) -> Streak:
        """The streak once `command` ran with `result`: one longer when it repeats `last` exactly, else a new one."""
        digest = hashlib.sha256(f"{result.output}\0{result.exception_info}".encode(errors="replace")).hexdigest()
        if last is not None and (last.command, last.digest, last.returncode) == (command, digest, result.returncode):
            return Streak(command, digest, result.returncode, last.count + 1)
        return Streak(command, digest, result.returncode, 1)

    def refuses(self, command: str, limit: int) -> bool:
        """Whether running `command` next would only repeat this streak past `limit` (0: the guard is off)."""
        return limit > 0 and command == self.command and self.count >= limit
