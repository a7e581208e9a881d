"""A GitLab job's trace as text a task can quote: raw ANSI colours, `section_start:`/`section_end:` markers and
carriage-return redraws removed, its end kept (a trace is megabytes, written by the repository's CI)."""

from __future__ import annotations

import re

# `section_start:1560896352:step_script[collapsed=true]\r\x1b[0K` (and `section_end:`): GitLab's collapsible sections
_SECTION = re.compile(r"section_(?:start|end):\d+:[A-Za-z0-9_.-]+(?:\[[^\]\r\n]*\])?\r?(?:\x1b\[0K)?")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def clean_trace(text: str) -> str:
    """The trace without section markers, ANSI escapes and the parts of a line a later `\\r` drew over."""
    text = _ANSI.sub("", _SECTION.sub("", text.replace("\r\n", "\n")))
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
