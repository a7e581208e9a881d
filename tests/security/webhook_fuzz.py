"""The fuzz harness both forges' webhook fuzz tests share: hostile values spliced into real payloads, byte-level
damage to the encoded body, and a loop that posts each delivery and asserts no answer is a server error."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("MINIFIX_FUZZ_EXAMPLES", "5000"))
# Values a hostile sender would try: huge and negative ints, floats, surrogates, deep lists, wrong types.
WEIRD = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 80), max_value=1 << 80)
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=40)
    | st.sampled_from(["\ud800", "\udfff", "@everyone", "mini-fix", "/agent retry", "a" * 300]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
Delivery = tuple[dict[str, Any], bytes]  # (headers, body)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for n, item in enumerate(value[:3]):
            found += _paths(item, (*prefix, n))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copied = dict(value) if isinstance(value, dict) else list(value)
    copied[head] = _replace(value[head], rest, new)
    return copied


def mutated(
    draw: st.DrawFn, bases: Sequence[tuple[str, Any]], events: Sequence[str], *, most: int = 3
) -> tuple[str, Any]:
    """(event, payload): a real payload with 1 to `most` fields replaced by WEIRD values, under its own event
    mostly, sometimes another one of `events`."""
    event, payload = draw(st.sampled_from(bases))
    for _ in range(draw(st.integers(1, most))):
        payload = _replace(payload, draw(st.sampled_from(_paths(payload))), draw(WEIRD))
    return draw(st.sampled_from([event, event, *events])), payload


def encoded(draw: st.DrawFn, payload: Any) -> bytes:
    """The payload as JSON (sometimes not ASCII-escaped), one time in ten with raw bytes spliced in."""
    body = json.dumps(payload, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.binary(max_size=8)) + body[at:]
    return body


def statuses_of(client: TestClient, url: str, deliveries: st.SearchStrategy[Delivery], examples: int) -> set[int]:
    """Post `examples` deliveries to `url`; every answer must be below 500. Returns the statuses seen."""
    statuses: dict[int, int] = {}

    @fuzz_settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(deliveries)
    def deliver(delivery: Delivery) -> None:
        headers, body = delivery
        status = client.post(url, content=body, headers=headers).status_code
        statuses[status] = statuses.get(status, 0) + 1
        assert status < 500, (status, headers, body[:300])

    deliver()
    assert sum(statuses.values()) >= examples
    print("fuzz statuses:", dict(sorted(statuses.items())))
    return set(statuses)
