"""The linear action scan gives exactly what mini-swe-agent's regex gives, and stays linear on hostile replies."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.agent.config import ACTION_REGEX
from bot.agent.fences import action_spans, find_actions
from bot.pipeline.publish.transcript import steps_from_messages

PIECES = ["```mswea_bash_command", "\n", "```", " ", "x", "\t", "`", "\n```", "\u2003", "\r\n", "ls -la"]
REGEX = re.compile(ACTION_REGEX, re.DOTALL)


@settings(max_examples=3000, deadline=None, database=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16).map("".join))
def test_the_scan_matches_the_regex(content: str) -> None:
    assert find_actions(content) == [m.strip() for m in REGEX.findall(content)]
    cut = "".join(content[a:b] for a, b in _gaps(content, action_spans(content)))
    assert cut == REGEX.sub("", content)


def _gaps(content: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    edges = [0, *[e for start, end, _ in spans for e in (start, end)], len(content)]
    return list(zip(edges[0::2], edges[1::2], strict=True))


def test_hostile_replies_are_read_in_one_pass() -> None:
    # With re.findall these take minutes (20 K newlines already took 6 s); here they are read at once.
    assert find_actions("```mswea_bash_command" + "\n" * 500_000) == []
    assert find_actions("```mswea_bash_command\nx" * 50_000) == []
    reply = {"role": "assistant", "content": "THOUGHT\n```mswea_bash_command" + " \n" * 200_000 + "ls\n```"}
    [step] = steps_from_messages([{"role": "system", "content": "s"}, {"role": "user", "content": "t"}, reply])
    assert step.command == "ls" and step.thought == "THOUGHT"
