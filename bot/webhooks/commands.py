"""`/agent <command>` lines in comments: the first one outside quotes and code blocks counts."""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMAND_LINE = re.compile(r"^\s*/agent(?=\s|$)(?:\s+(?P<name>\S+))?(?P<rest>.*)$", re.IGNORECASE)
FENCES = ("```", "~~~")
KNOWN = ("retry", "stop", "help")


@dataclass(frozen=True)
class Command:
    """A parsed command: its name (retry, stop, help, or unknown) and the guidance after it."""

    name: str
    guidance: str = ""


def parse_command(body: str) -> Command | None:
    """The first `/agent` command of a comment body, or None when it has none."""
    lines = body.replace("\r\n", "\n").split("\n")
    in_fence = False
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(FENCES):
            in_fence = not in_fence
            continue
        if in_fence or stripped.startswith(">"):
            continue
        match = COMMAND_LINE.match(line)
        if match is None:
            continue
        name = (match.group("name") or "help").lower()
        if name not in KNOWN:
            return Command("unknown", name)
        following = "\n".join(lines[index + 1 :])
        guidance = "\n".join(part for part in (match.group("rest").strip(), following.strip()) if part)
        return Command(name, guidance if name == "retry" else "")
    return None
