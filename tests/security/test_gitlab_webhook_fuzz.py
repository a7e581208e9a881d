"""Fuzz GitLab's webhook route: mutated documented payloads and hostile headers never get a response >= 500."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st

from bot.gitlab.webhooks import decide
from bot.settings import Settings
from tests.security.webhook_client import SECRET as GITHUB_SECRET
from tests.security.webhook_client import client, job_queue, ledger
from tests.security.webhook_fuzz import EXAMPLES, Delivery, encoded, mutated, statuses_of
from tests.support.gitlab_hooks import SECRET, labeled, merge_request_hook, note_hook, pipeline_hook

__all__ = ["client", "job_queue", "ledger"]
REPO = "acme/widgets"
EVENTS = ["Issue Hook", "Note Hook", "Merge Request Hook", "Pipeline Hook", "System Hook", "Push Hook", ""]
BASES = [
    ("Issue Hook", labeled(REPO, 1)),
    ("Note Hook", note_hook(REPO, 2, "/agent retry now", on="MergeRequest")),
    ("Note Hook", note_hook(REPO, 2, "/agent stop")),
    ("Merge Request Hook", merge_request_hook(REPO, 3, action="merge")),
    (
        "Merge Request Hook",
        merge_request_hook(
            REPO, 3, action="update", reviewers=[("bob", "requested_changes")], previous_reviewers=[("bob", "reviewed")]
        ),
    ),
    ("Pipeline Hook", pipeline_hook(REPO, status="failed")),
]
HEADER_TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=120)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        webhook_secret=GITHUB_SECRET,
        gitlab_webhook_secret=SECRET,
        data_dir=tmp_path,
        label="mini-fix",
        webhook_cache_seconds=0,
        _env_file=None,
    )


@st.composite
def deliveries(draw: st.DrawFn) -> Delivery:
    """A documented payload with a few fields replaced, sometimes with odd headers or bytes."""
    event, payload = mutated(draw, BASES, EVENTS)
    body = encoded(draw, payload)
    headers: dict[str, Any] = {
        "X-Gitlab-Event": event,
        "X-Gitlab-Token": SECRET,
        "X-Gitlab-Event-UUID": str(uuid.uuid4()),
    }
    if draw(st.booleans()):
        headers["Idempotency-Key"] = str(uuid.uuid4())
    if draw(st.integers(0, 9)) == 0:  # a hostile header value in place of one of GitLab's
        name = draw(st.sampled_from(["X-Gitlab-Event", "X-Gitlab-Token", "X-Gitlab-Event-UUID", "Idempotency-Key"]))
        headers[name] = draw(HEADER_TEXT).encode("latin-1")
    return headers, body


def test_no_mutated_gitlab_delivery_gets_a_server_error(client: TestClient) -> None:
    statuses = statuses_of(client, "/webhook/gitlab", deliveries(), EXAMPLES // 2)
    assert 202 in statuses  # some got through


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, Any]:
    """(event, payload): a documented payload mutated as above, without the byte-level damage."""
    return mutated(draw, BASES, EVENTS, most=4)


def test_decide_never_raises_on_a_mutated_payload(settings: Settings) -> None:
    # The route turns an exception in `decide` into a 400; a pure decision should not need that net at all.
    named = settings.model_copy(update={"gitlab_bot_username": "minifix", "allow_owners": ["acme"]})

    @fuzz_settings(max_examples=EXAMPLES // 2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(payloads())
    def check(delivery: tuple[str, Any]) -> None:
        event, payload = delivery
        decision = decide(event, payload, named, delivery_id="fuzz")
        assert decision.action in ("enqueue", "cancel", "ignore", "pr_outcome")

    check()
