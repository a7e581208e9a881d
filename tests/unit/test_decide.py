"""decide(): every vendored payload, and the trigger rules on variants of real payloads."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from bot.jobs import JobDetails, JobKind
from bot.settings import Settings
from bot.webhooks import decide
from bot.webhooks.commands import parse_command

EXPECTED_ACTION = {
    "issues": "ignore",  # the examples label with `bug`, never with the trigger label
    "issue_comment": "ignore",  # no /agent command in any example
    "pull_request": "ignore",
    "installation": "installation",
    "installation_repositories": "installation",
}


@pytest.mark.parametrize("event", sorted(EXPECTED_ACTION))
def test_every_example_gets_the_expected_decision(event: str, settings: Settings, examples: Examples) -> None:
    for payload in examples(event):
        decision = decide(event, payload, settings, delivery_id="d-1")
        assert decision.action == EXPECTED_ACTION[event], (payload.get("action"), decision.reason)


Examples = Callable[[str], list[dict[str, Any]]]
Make = Callable[..., dict[str, Any]]


@pytest.fixture
def labeled(examples: Examples) -> Callable[..., dict[str, Any]]:
    """A real `issues.labeled` payload, relabelled."""

    def make(label: str = "mini-fix") -> dict[str, Any]:
        payload = copy.deepcopy(next(p for p in examples("issues") if p["action"] == "labeled"))
        payload.setdefault("installation", {"id": 4242})  # the examples were not delivered to an App
        payload["label"]["name"] = label
        return payload

    return make


@pytest.fixture
def comment(examples: Examples) -> Callable[..., dict[str, Any]]:
    """A real `issue_comment.created` payload with another body."""

    def make(body: str, *, on_pr: bool = False) -> dict[str, Any]:
        payload = copy.deepcopy(next(p for p in examples("issue_comment") if p["action"] == "created"))
        payload.setdefault("installation", {"id": 4242})
        payload["comment"]["body"] = body
        if on_pr:
            payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/9"}
        return payload

    return make


def test_trigger_label_on_open_issue_is_a_fix_job(settings: Settings, labeled: Make) -> None:
    payload = labeled("Mini-Fix")
    decision = decide("issues", payload, settings, delivery_id="d-7")
    assert decision.action == "enqueue" and decision.job is not None
    assert decision.job.kind == JobKind.FIX
    assert decision.job.repo == payload["repository"]["full_name"]
    assert decision.job.issue == payload["issue"]["number"]
    assert decision.job.installation_id == payload["installation"]["id"]
    assert decision.job.requester == payload["sender"]["login"]
    assert decision.job.delivery_id == "d-7"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda p: p["label"].update(name="bug"), "label is not"),
        (lambda p: p["issue"].update(state="closed"), "closed"),
        (lambda p: p["issue"].update(pull_request={"url": "x"}), "pull request"),
        (lambda p: p["sender"].update(type="Bot"), "bot"),
        (lambda p: p.pop("installation"), "installation"),
        (lambda p: p.update(issue="not an object"), "lacks"),
    ],
)
def test_labeled_is_ignored_when(change: Any, reason: str, settings: Settings, labeled: Make) -> None:
    payload = labeled()
    change(payload)
    decision = decide("issues", payload, settings)
    assert decision.action == "ignore" and reason in decision.reason


@pytest.mark.parametrize("action", ["unlabeled", "closed"])
def test_unlabel_and_close_cancel(action: str, settings: Settings, labeled: Make) -> None:
    payload = labeled()
    payload["action"] = action
    decision = decide("issues", payload, settings)
    assert decision.action == "cancel" and decision.cancel is not None
    assert decision.cancel.issue == payload["issue"]["number"]


def test_unlabel_of_another_label_is_ignored(settings: Settings, labeled: Make) -> None:
    payload = labeled("bug")
    payload["action"] = "unlabeled"
    assert decide("issues", payload, settings).action == "ignore"


def test_retry_comment_is_a_retry_job_with_guidance(settings: Settings, comment: Make) -> None:
    payload = comment("Thanks!\n/agent retry use the new API\nand keep tests green")
    decision = decide("issue_comment", payload, settings, delivery_id="d-2")
    assert decision.action == "enqueue" and decision.job is not None
    assert decision.job.kind == JobKind.RETRY
    assert decision.job.guidance == "use the new API\nand keep tests green"
    assert decision.job.comment_id == payload["comment"]["id"]
    assert decision.job.details == JobDetails()


def test_retry_fresh_is_marked_and_the_flag_leaves_the_guidance(settings: Settings, comment: Make) -> None:
    decision = decide("issue_comment", comment("/agent retry --fresh use the new API\nthanks"), settings)
    assert decision.job is not None and decision.job.details == JobDetails(fresh=True)
    assert decision.job.guidance == "use the new API\nthanks"
    plain = decide("issue_comment", comment("/agent retry use --fresh data"), settings)
    assert plain.job is not None and plain.job.details == JobDetails() and plain.job.guidance == "use --fresh data"


def test_retry_on_a_pull_request_is_marked(settings: Settings, comment: Make) -> None:
    decision = decide("issue_comment", comment("/agent retry", on_pr=True), settings, delivery_id="d-3")
    assert decision.job is not None and decision.job.details == JobDetails(on_pull_request=True)


@pytest.mark.parametrize(
    ("body", "kind"), [("/agent stop", JobKind.STOP), ("/AGENT help", JobKind.HELP), ("/agent dance", JobKind.HELP)]
)
def test_stop_and_help_comments_are_control_jobs(settings: Settings, comment: Make, body: str, kind: JobKind) -> None:
    decision = decide("issue_comment", comment(body), settings, delivery_id="d-9")
    assert decision.action == "enqueue" and decision.job is not None and decision.job.kind == kind


def test_comments_from_bots_and_edits_are_ignored(settings: Settings, comment: Make) -> None:
    bot = comment("/agent retry")
    bot["sender"]["type"] = "Bot"
    assert decide("issue_comment", bot, settings).action == "ignore"
    edited = comment("/agent retry")
    edited["action"] = "edited"
    assert decide("issue_comment", edited, settings).action == "ignore"


@pytest.mark.parametrize(
    "body",
    [
        "> /agent retry",
        "```\n/agent retry\n```",
        "please /agent retry",
        "/agentretry",
        "~~~\n/agent stop\n~~~",
    ],
)
def test_commands_in_quotes_code_or_mid_line_do_not_count(body: str) -> None:
    assert parse_command(body) is None


def test_first_command_after_a_code_block_counts() -> None:
    command = parse_command("```\n/agent stop\n```\n  /Agent Retry  try harder")
    assert command is not None and command.name == "retry" and command.guidance == "try harder"


def test_installation_events_carry_their_repositories(settings: Settings, examples: Examples) -> None:
    created = next(p for p in examples("installation") if p["action"] == "created")
    decision = decide("installation", created, settings)
    assert decision.installation is not None
    assert decision.installation.installation_id == created["installation"]["id"]
    assert decision.installation.repositories_added == tuple(r["full_name"] for r in created["repositories"])
    removed = next(p for p in examples("installation_repositories") if p["action"] == "removed")
    change = decide("installation_repositories", removed, settings).installation
    assert change is not None and change.repositories_removed


def test_unknown_events_are_ignored(settings: Settings) -> None:
    assert decide("star", {"action": "created"}, settings).action == "ignore"
