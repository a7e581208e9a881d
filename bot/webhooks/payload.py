"""The raw body read strictly: every defect a sender can put in it is a 400, never a crash further on."""

from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from typing import Any

INT_RANGE = range(-(1 << 63), 1 << 63)  # what the ledger's integer columns hold
# A surrogate written as an escape, or as raw (CESU-8) bytes, which json.loads lets through ("surrogatepass").
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


class BadPayload(ValueError):
    """The body is not a JSON object the App can read; the message says why."""


def _bounded_int(text: str) -> int:
    if len(text) > 18 and (len(text) > 20 or int(text) not in INT_RANGE):
        raise BadPayload("an integer is out of range")
    return int(text)


def _no_constant(name: str) -> Any:
    raise BadPayload(f"{name} is not JSON")


def parse_body(body: bytes) -> dict[str, Any]:
    """The payload as a dict: UTF-8, no lone surrogates, no NaN, ints within 64 bits; too deep is refused too."""
    try:
        payload = json.loads(body, parse_int=_bounded_int, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # BadPayload and UnicodeDecodeError are ValueErrors
        raise BadPayload(f"body is not JSON: {exc}"[:200]) from exc
    if not isinstance(payload, dict):
        raise BadPayload("body is not a JSON object")
    maybe = b"\\u" in body or b"\xed" in body  # substring tests first: most bodies have neither
    if maybe and _SURROGATE.search(body) and not _encodable(payload):
        raise BadPayload("body holds a lone UTF-16 surrogate")
    return payload


def _encodable(value: Any) -> bool:
    """Whether every string in the payload is valid Unicode (encodes to UTF-8)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += list(item.keys()) + list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


class ReplayWindow:
    """Bodies seen lately, by digest: the same signed body under another delivery id is a replay, not an event.

    In memory, per process (no database round trip per delivery); a redelivery keeps its id and is left to the
    ledger's key. Across API replicas the ledger refuses a second job for one body (its `body_sha256` index)."""

    def __init__(self, seconds: float, max_entries: int = 50_000) -> None:
        self.seconds, self.max_entries = seconds, max_entries
        self._seen: OrderedDict[bytes, tuple[str, float]] = OrderedDict()

    def replayed(self, digest: bytes, delivery: str, now: float | None = None) -> bool:
        """Whether the body of this sha256 came within the window under a different delivery id; records it
        otherwise."""
        now = time.monotonic() if now is None else now
        self._expire(now)
        seen = self._seen.get(digest)
        if seen is not None:
            return seen[0] != delivery
        self._seen[digest] = (delivery, now)
        if len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)
        return False

    def _expire(self, now: float) -> None:
        while self._seen:
            _, (_, at) = next(iter(self._seen.items()))
            if now - at <= self.seconds:
                return
            self._seen.popitem(last=False)
