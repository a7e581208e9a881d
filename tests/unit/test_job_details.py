"""`JobDetails`: the typed fields of what a job carries beside the ledger's columns, and their stored JSON."""

from __future__ import annotations

import json

import pytest

from bot.jobs import AddressedComment, JobDetails

EVERY_FIELD = JobDetails(
    label="mini-fix",
    on_pull_request=True,
    pull_request=9,
    head_sha="abc123",
    review_id=55,
    delivery="d-1",
    fresh=True,
    unknown_command="dance",
    queue_full=True,
    followup_task="CI failed",
    followup_addressed=(AddressedComment(1, "calc.py", 2, "keep it"), AddressedComment(2, "a.py", None, "")),
)


def test_every_field_survives_the_ledger_column() -> None:
    assert JobDetails.from_json(EVERY_FIELD.to_json()) == EVERY_FIELD


def test_the_column_holds_only_what_differs_from_the_defaults_under_the_old_key_names() -> None:
    assert JobDetails().to_json() == "{}"
    stored = json.loads(JobDetails(pull_request=12, fresh=True, queue_full=False).to_json())
    assert stored == {"pull_request": 12, "fresh": True}  # no `queue_full`: the ledger's SQL tests the key's absence


def test_the_previous_versions_untyped_dict_loads() -> None:
    old = {"pull_request": 9, "review_id": 55, "head_sha": "abc", "delivery": "review:x", "on_pull_request": False}
    assert JobDetails.from_json(json.dumps(old)) == JobDetails(
        pull_request=9, review_id=55, head_sha="abc", delivery="review:x"
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"future_key": {"nested": 1}}',
        "[1, 2]",
        "null",
        "",
        "not json",
        '{"pull_request": true, "fresh": 1}',
        '{"review_id": "\u00b2", "pull_request": "\u0663"}',  # digits to str.isdigit, not to int()
    ],
)
def test_unknown_keys_and_odd_values_are_ignored(text: str) -> None:
    assert JobDetails.from_json(text) == JobDetails()


def test_numbers_written_as_text_are_read_as_numbers() -> None:
    assert JobDetails.from_json('{"review_id": "55", "pull_request": "-3"}') == JobDetails(review_id=55)


def test_addressed_comments_without_a_number_are_left_out() -> None:
    text = json.dumps({"followup_addressed": [{"path": "x"}, {"n": 2, "path": "y.py", "line": 4, "first": "f"}, 7]})
    assert JobDetails.from_json(text).followup_addressed == (AddressedComment(2, "y.py", 4, "f"),)
