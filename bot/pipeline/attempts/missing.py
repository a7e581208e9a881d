"""Exit 127 ("command not found") and 126 ("not executable"): a tool missing from the sandbox image, not a verdict.

A check or a reproduction that ends so never ran any test: it is reported as the missing tool (named from the
shell's own message where it has one, else the command's first word), never as a failing test or a valid "fails
before". The name comes from untrusted output: only a short run of name characters is kept.
"""

from __future__ import annotations

import re
import shlex

CODES = {127: "not found", 126: "not executable"}
# `sh: 1: mocha: not found` (dash), `/bin/sh: mocha: not found`, `bash: line 1: mocha: command not found`,
# `bash: mocha: command not found`, `env: 'node': No such file or directory` (a `#!/usr/bin/env node` script).
_SHELL_SAYS = re.compile(
    r"(?m)^(?:\S{0,40}: )?(?:line \d{1,9}: |\d{1,9}: )?([\w.+/-]{1,80}): (?:command )?not found\s*$"
    r"|^(?:/usr/bin/)?env: ['\u2018]([\w.+/-]{1,80})['\u2019]: No such file or directory\s*$"
)
_NAME = re.compile(r"[\w.+/-]{1,80}")


def missing_tool(returncode: int | None, output: str, command: str) -> str | None:
    """The tool the command could not run (exit 127 or 126), or None when it ran."""
    if returncode not in CODES:
        return None
    return shell_said(output) or _first_word(command) or "a program"


def shell_said(output: str) -> str | None:
    """The program a shell (or `env`) last said it could not find, from the end of the output; None when none."""
    said = [a or b for a, b in _SHELL_SAYS.findall(output[-4000:])]
    return str(said[-1]) if said else None


def describe(tool: str, returncode: int) -> str:
    """In a reviewer's words."""
    how = CODES.get(returncode, "not runnable")
    return f"`{tool}` is {how} in the sandbox image (exit {returncode}), so no test ran"


def _first_word(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = [w for w in words if "=" not in w.split("/")[0]]  # leading VAR=value assignments
    found = _NAME.match(words[0]) if words else None
    return found.group(0) if found else None
