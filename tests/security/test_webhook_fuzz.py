"""Fuzz the webhook route: correctly signed, mutated real payloads never get a response >= 500."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st

from tests.security.webhook_client import _sign, client, job_queue, ledger, settings
from tests.support.webhooks import example, installation_created, labeled, pr_comment

__all__ = ["client", "job_queue", "ledger", "settings"]
EXAMPLES = int(os.environ.get("MINIFIX_FUZZ_EXAMPLES", "5000"))
EVENTS = ["issues", "issue_comment", "installation", "installation_repositories", "ping", "push", ""]
BASES = [
    ("issues", labeled("acme/widgets", 1, sender="alice")),
    ("issue_comment", pr_comment("acme/widgets", 2, "/agent retry now", sender="alice")),
    ("installation", installation_created("acme", ["acme/widgets"])),
    ("issues", example("issues", "unlabeled")),
]
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


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[str, bytes]:
    """(event, body): a real payload with a few fields replaced, sometimes with raw bytes spliced in."""
    event, payload = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(payload)
        payload = _replace(payload, draw(st.sampled_from(paths)), draw(WEIRD))
    body = json.dumps(payload, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.binary(max_size=8)) + body[at:]
    if draw(st.integers(0, 19)) == 0:
        depth = draw(st.integers(100, 5000))
        body = b'{"issue":' + b"[" * depth + b"]" * depth + b"}"
    return draw(st.sampled_from([event, event, *EVENTS])), body


def test_no_signed_mutated_delivery_gets_a_server_error(client: TestClient) -> None:
    statuses: dict[int, int] = {}

    @fuzz_settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(deliveries())
    def deliver(delivery: tuple[str, bytes]) -> None:
        event, body = delivery
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": _sign(body)}
        status = client.post("/webhook", content=body, headers=headers).status_code
        statuses[status] = statuses.get(status, 0) + 1
        assert status < 500, (status, body[:300])

    deliver()
    assert sum(statuses.values()) >= EXAMPLES and any(code < 300 for code in statuses)  # some got through
    print("fuzz statuses:", dict(sorted(statuses.items())))
