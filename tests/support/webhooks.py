"""Signed webhook deliveries built from the vendored @octokit/webhooks-examples payloads."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import httpx

FIXTURES = Path(__file__).parent.parent / "fixtures" / "webhooks"


@cache
def _examples(event: str) -> list[dict[str, Any]]:
    payloads: list[dict[str, Any]] = json.loads((FIXTURES / f"{event}.json").read_text())
    return payloads


def example(event: str, action: str) -> dict[str, Any]:
    """A fresh copy of the first vendored `event` payload with this action."""
    return copy.deepcopy(next(p for p in _examples(event) if p.get("action") == action))


def labeled(repo: str, issue: int, *, sender: str, label: str = "mini-fix", installation: int = 1) -> dict[str, Any]:
    """A real `issues.labeled` payload pointed at one repository, issue and sender."""
    payload = example("issues", "labeled")
    owner, name = repo.split("/")
    payload["installation"] = {"id": installation}
    payload["label"]["name"] = label
    payload["issue"].update(number=issue, state="open")
    payload["issue"].pop("pull_request", None)
    payload["repository"].update(full_name=repo, name=name)
    payload["repository"]["owner"]["login"] = owner
    payload["sender"].update(login=sender, type="User")
    return payload


def body_for(payload: dict[str, Any], delivery: str) -> bytes:
    """The raw body GitHub would send for this delivery: like GitHub's, it differs from every other delivery's
    (the subject's `updated_at` moves at each event), so the App's replay check sees a new body."""
    stamped = dict(payload)
    for key in ("issue", "comment", "installation"):
        if isinstance(stamped.get(key), dict):
            stamped[key] = {**stamped[key], "updated_at": _stamp(delivery)}
    return json.dumps(stamped).encode()


def _stamp(delivery: str) -> str:
    micros = int(hashlib.sha256(delivery.encode()).hexdigest()[:12], 16) % (10**12)
    return f"2026-01-01T00:00:00.{micros:012d}Z"


def signature(body: bytes, secret: str) -> str:
    """GitHub's X-Hub-Signature-256 value."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(url: str, event: str, payload: dict[str, Any], secret: str, delivery: str | None = None) -> httpx.Response:
    """POST a payload as GitHub does: raw JSON, signed, with event and delivery headers."""
    delivery = delivery or str(uuid.uuid4())
    body = body_for(payload, delivery)
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": signature(body, secret),
        "Content-Type": "application/json",
    }
    return httpx.post(url, content=body, headers=headers, timeout=10)


def pr_comment(repo: str, pr: int, body: str, *, sender: str, installation: int = 1) -> dict[str, Any]:
    """A real `issue_comment.created` payload for a comment on a pull request."""
    payload = example("issue_comment", "created")
    owner, name = repo.split("/")
    payload["installation"] = {"id": installation}
    payload["issue"].update(number=pr, state="open", pull_request={"url": f"https://api.invalid/{repo}/pulls/{pr}"})
    payload["comment"].update(body=body, id=900_000 + pr)
    payload["comment"]["user"].update(login=sender, type="User")
    payload["repository"].update(full_name=repo, name=name)
    payload["repository"]["owner"]["login"] = owner
    payload["sender"].update(login=sender, type="User")
    return payload


def installation_created(owner: str, repos: list[str], installation: int = 1) -> dict[str, Any]:
    """A real `installation.created` payload for one account and its repositories."""
    payload = example("installation", "created")
    payload["installation"]["id"] = installation
    payload["installation"]["account"]["login"] = owner
    payload["repositories"] = [
        {"id": n + 1, "name": r.split("/")[1], "full_name": r, "private": False} for n, r in enumerate(repos)
    ]
    payload["sender"].update(type="User")
    return payload
