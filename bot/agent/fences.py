"""mini-swe-agent's default action regex, ```` ```mswea_bash_command\\s*\\n(.*?)\\n``` ```` (DOTALL), in linear time.

`re.findall` with that pattern backtracks over every whitespace run after an opening fence and rescans to the end
for each fence without a close: quadratic in a hostile reply. This scan gives the same matches once stripped (the
agent strips every action), finding each close once.
"""

from __future__ import annotations

OPEN = "```mswea_bash_command"
CLOSE = "\n```"


def find_actions(content: str) -> list[str]:
    """The stripped bodies `re.findall(ACTION_REGEX, content, re.DOTALL)` would give, in one pass."""
    return [body for _, _, body in action_spans(content)]


def action_spans(content: str) -> list[tuple[int, int, str]]:
    """Each match of the default action regex as (start, end, stripped body), left to right, not overlapping."""
    found: list[tuple[int, int, str]] = []
    none = len(content) + 1  # "no CLOSE from here on": never searched for again
    close = -1  # the first CLOSE at or after the current body start, found once and reused
    at = content.find(OPEN)
    while at >= 0:
        start = at + len(OPEN)
        end = _space_end(content, start)
        last = content.rfind("\n", start, end)
        if last < 0:
            at = content.find(OPEN, at + 1)
            continue
        body = last + 1
        if close < body:
            close = content.find(CLOSE, body)
            close = none if close < 0 else close
        if close != none:
            found.append((at, close + len(CLOSE), content[body:close].strip()))
            at = content.find(OPEN, close + len(CLOSE))
            continue
        if body == end and content.startswith("```", end) and content.rfind("\n", start, last) >= 0:
            found.append((at, end + 3, ""))  # an empty block: the close is the run's own last newline
            at = content.find(OPEN, end + 3)
            continue
        at = content.find(OPEN, at + 1)
    return found


def _space_end(content: str, start: int) -> int:
    end = start
    while end < len(content) and content[end].isspace():
        end += 1
    return end
