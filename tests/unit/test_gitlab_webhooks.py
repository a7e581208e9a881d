"""GitLab's route table: each documented quirk of its hooks mapped onto the same decisions as GitHub's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.forge_ids import installation_of, mr_number
from bot.gitlab.webhooks import decide
from bot.jobs import JobKind
from bot.settings import Settings
from tests.support.gitlab_hooks import (
    BOT,
    PROJECT_ID,
    issue_hook,
    labeled,
    merge_request_hook,
    note_hook,
    pipeline_hook,
)

REPO = "acme/tools/widgets"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(webhook_secret="s" * 20, data_dir=tmp_path, label="mini-fix", _env_file=None)


def run(event: str, payload: dict[str, Any], settings: Settings, delivery: str = "d-1") -> Any:
    return decide(event, payload, settings, delivery_id=delivery)


# Issue Hook ----------------------------------------------------------------------------------------------------


def test_label_newly_in_current_starts_a_fix_for_the_issue_iid(settings: Settings) -> None:
    decision = run("Issue Hook", labeled(REPO, 5, had=["bug"]), settings)
    assert decision.action == "enqueue"
    job = decision.job
    assert (job.kind, job.repo, job.issue, job.requester) == (JobKind.FIX, REPO, 5, "alice")
    assert job.installation_id == installation_of(REPO) < 0
    assert job.details.label == "mini-fix" and job.delivery_id == "d-1"


def test_an_edit_of_a_labelled_issue_is_also_action_update_and_starts_nothing(settings: Settings) -> None:
    # The title changed: `labels` lists the trigger, but `changes` has no label diff.
    payload = issue_hook(REPO, 5, current=["mini-fix"])
    del payload["changes"]["labels"]
    assert run("Issue Hook", payload, settings).action == "ignore"
    # A label diff that keeps the trigger (another label added) starts nothing either.
    kept = issue_hook(REPO, 5, previous=["mini-fix"], current=["mini-fix", "bug"])
    assert run("Issue Hook", kept, settings).action == "ignore"


def test_trigger_label_matches_case_insensitively(settings: Settings) -> None:
    assert run("Issue Hook", labeled(REPO, 5, label="Mini-Fix"), settings).action == "enqueue"
    assert run("Issue Hook", labeled(REPO, 5, label="other"), settings).action == "ignore"


def test_label_removed_or_issue_closed_cancels(settings: Settings) -> None:
    removed = run("Issue Hook", issue_hook(REPO, 5, previous=["mini-fix"], current=[]), settings)
    assert removed.action == "cancel" and removed.cancel.issue == 5
    closed = run("Issue Hook", issue_hook(REPO, 5, action="close", state="closed"), settings)
    assert closed.action == "cancel" and closed.cancel.reason == "issue closed"


def test_label_on_a_closed_issue_or_by_the_bot_is_ignored(settings: Settings) -> None:
    closed = labeled(REPO, 5)
    closed["object_attributes"]["state"] = "closed"
    assert run("Issue Hook", closed, settings).action == "ignore"
    assert run("Issue Hook", labeled(REPO, 5, user=BOT), settings).action == "ignore"
    named = settings.model_copy(update={"gitlab_bot_username": "minifix"})
    assert run("Issue Hook", labeled(REPO, 5, user="MiniFix"), named).action == "ignore"
    assert run("Issue Hook", labeled(REPO, 5, user="minifix"), settings).action == "enqueue"


def test_allow_and_deny_lists_apply(settings: Settings) -> None:
    # A GitLab project's owner is its top-level group; its repository is the full path with subgroups.
    for update in ({"deny_owners": ["ACME"]}, {"deny_repos": [REPO]}, {"allow_owners": ["other"]}):
        decision = run("Issue Hook", labeled(REPO, 5), settings.model_copy(update=update))
        assert decision.action == "ignore" and "MINIFIX_" in decision.reason
    assert run("Issue Hook", labeled(REPO, 5), settings.model_copy(update={"allow_owners": ["acme"]})).job


# Note Hook -----------------------------------------------------------------------------------------------------


def test_retry_note_on_an_issue_uses_the_iid_not_the_noteable_id(settings: Settings) -> None:
    payload = note_hook(REPO, 4, "/agent retry\nuse the cache", note_id=77)
    decision = run("Note Hook", payload, settings)
    job = decision.job
    assert payload["object_attributes"]["noteable_id"] != 4
    assert (decision.action, job.kind, job.issue, job.guidance, job.comment_id) == (
        "enqueue", JobKind.RETRY, 4, "use the cache", 77,
    )  # fmt: skip
    assert not job.details.on_pull_request


def test_retry_on_mini_fix_mr_goes_to_its_issue_and_on_another_mr_keeps_the_mr_iid(settings: Settings) -> None:
    ours = run("Note Hook", note_hook(REPO, 3, "/agent retry --fresh", on="MergeRequest"), settings).job
    assert (ours.issue, ours.details.pull_request, ours.details.fresh, ours.details.on_pull_request) == (
        1,
        mr_number(3),  # MR !3, numbered apart from issue #3 (bot/forge_ids.py)
        True,
        False,
    )
    other = note_hook(REPO, 3, "/agent retry", on="MergeRequest", branch="feature/x")
    job = run("Note Hook", other, settings).job
    assert (job.issue, job.details.on_pull_request) == (mr_number(3), True)


def test_stop_and_help_notes_are_control_jobs(settings: Settings) -> None:
    stop = run("Note Hook", note_hook(REPO, 4, "/agent stop"), settings).job
    assert stop.kind == JobKind.STOP
    unknown = run("Note Hook", note_hook(REPO, 4, "/agent dance"), settings).job
    assert (unknown.kind, unknown.details.unknown_command) == (JobKind.HELP, "dance")


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"user": BOT}, "bot"),
        ({"system": True}, "system"),
        ({"body": "Looks good"}, "command"),
        ({"body": "> /agent retry"}, "command"),
    ],
)
def test_notes_that_carry_no_command(settings: Settings, changes: dict[str, Any], why: str) -> None:
    payload = note_hook(REPO, 4, changes.get("body", "/agent retry"), user=changes.get("user", "alice"))
    payload["object_attributes"]["system"] = changes.get("system", False)
    decision = run("Note Hook", payload, settings)
    assert decision.action == "ignore" and why in decision.reason


def test_retry_on_a_closed_issue_is_ignored_but_stop_is_not(settings: Settings) -> None:
    assert run("Note Hook", note_hook(REPO, 4, "/agent retry", issue_state="closed"), settings).action == "ignore"
    assert run("Note Hook", note_hook(REPO, 4, "/agent stop", issue_state="closed"), settings).action == "enqueue"


def test_diff_notes_alone_start_no_review_follow_up(settings: Settings) -> None:
    for n in range(3):
        payload = note_hook(REPO, 3, f"rename this {n}", on="MergeRequest", diff=True, note_id=500 + n)
        decision = run("Note Hook", payload, settings)
        assert decision.action == "ignore" and "diff note" in decision.reason


# Merge Request Hook --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("action", "merged"), [("close", False), ("merge", True)])
def test_closed_or_merged_mr_cancels_its_issue_runs_and_records_it(
    settings: Settings, action: str, merged: bool
) -> None:
    decision = run(
        "Merge Request Hook", merge_request_hook(REPO, 3, action=action, branch="mini-fix/issue-8"), settings
    )
    assert decision.action == "cancel"
    assert (decision.cancel.repo, decision.cancel.issue) == (REPO, 8)
    assert (decision.pr_event.pull, decision.pr_event.kind, decision.pr_event.merged) == (
        mr_number(3),
        "closed",
        merged,
    )


def test_mr_hooks_of_other_branches_forks_and_the_bot_are_ignored(settings: Settings) -> None:
    other = merge_request_hook(REPO, 3, action="close", branch="feature/x")
    fork = merge_request_hook(REPO, 3, action="close", source_project_id=PROJECT_ID + 1)
    bot = merge_request_hook(REPO, 3, action="close", user=BOT)
    for payload in (other, fork, bot):
        assert run("Merge Request Hook", payload, settings).action == "ignore"


def test_reviewer_newly_requesting_changes_asks_for_one_review_follow_up(settings: Settings) -> None:
    payload = merge_request_hook(
        REPO, 3, action="update", user="bob", reviewers=[("bob", "requested_changes")],
        previous_reviewers=[("bob", "review_started")],
    )  # fmt: skip
    decision = run("Merge Request Hook", payload, settings, delivery="uuid-1")
    job = decision.job
    assert (decision.action, job.kind, job.issue, job.details.pull_request) == (
        "enqueue",
        JobKind.REVIEW,
        1,
        mr_number(3),
    )
    assert job.details.review_id == 100 and job.details.head_sha == "a1" * 20
    # A redelivery under another delivery id keeps the key: the ledger records one job.
    again = run("Merge Request Hook", payload, settings, delivery="uuid-2").job
    assert again.delivery_id == job.delivery_id


def test_reviewer_state_without_a_change_or_other_states_ask_for_nothing(settings: Settings) -> None:
    standing = merge_request_hook(REPO, 3, action="update", reviewers=[("bob", "requested_changes")])
    approved = merge_request_hook(
        REPO, 3, action="update", reviewers=[("bob", "approved")], previous_reviewers=[("bob", "unreviewed")]
    )
    still = merge_request_hook(
        REPO, 3, action="update", reviewers=[("bob", "requested_changes")],
        previous_reviewers=[("bob", "requested_changes")],
    )  # fmt: skip
    for payload in (standing, approved, still):
        assert run("Merge Request Hook", payload, settings).action == "ignore"


def test_a_persons_push_to_the_mr_is_recorded(settings: Settings) -> None:
    decision = run("Merge Request Hook", merge_request_hook(REPO, 3, action="update", oldrev="b" * 40), settings)
    assert decision.action == "pr_outcome" and decision.pr_event.kind == "human_push"


def test_system_hook_merge_request_is_routed_by_object_kind(settings: Settings) -> None:
    payload = merge_request_hook(REPO, 3, action="merge")
    assert run("System Hook", payload, settings).action == "cancel"
    assert run("System Hook", {"object_kind": "push"}, settings).action == "ignore"


# Pipeline Hook -------------------------------------------------------------------------------------------------


def test_failed_pipeline_of_the_bots_push_asks_for_one_ci_follow_up(settings: Settings) -> None:
    decision = run("Pipeline Hook", pipeline_hook(REPO, status="failed", mr_iid=3), settings)
    job = decision.job
    assert (decision.action, job.kind, job.issue, job.details.pull_request) == ("enqueue", JobKind.CI, 1, mr_number(3))
    assert job.requester == BOT and job.details.head_sha == "a1" * 20
    retried = run("Pipeline Hook", pipeline_hook(REPO, status="failed", pipeline_id=32), settings, delivery="d-2").job
    assert retried.delivery_id == job.delivery_id  # one follow-up per failed commit


@pytest.mark.parametrize("status", ["created", "pending", "running", "success", "canceled", "skipped", "manual"])
def test_only_the_failed_status_acts(settings: Settings, status: str) -> None:
    assert run("Pipeline Hook", pipeline_hook(REPO, status=status), settings).action == "ignore"


def test_pipelines_that_get_no_follow_up(settings: Settings) -> None:
    person = pipeline_hook(REPO, status="failed", user="alice")
    other = pipeline_hook(REPO, status="failed", branch="feature/x")
    fork = pipeline_hook(REPO, status="failed", source_project_id=PROJECT_ID + 1)
    merged = pipeline_hook(REPO, status="failed", mr_state="merged")
    for payload in (person, other, fork, merged):
        assert run("Pipeline Hook", payload, settings).action == "ignore"


def test_a_failed_branch_pipeline_of_the_bots_push_asks_for_a_ci_follow_up_whose_mr_the_worker_finds(
    settings: Settings,
) -> None:
    # GitLab's default: a branch pipeline, `merge_request: null`; the branch is `object_attributes.ref`.
    payload = pipeline_hook(REPO, status="failed", mr_iid=None, branch="mini-fix/issue-4")
    decision = run("Pipeline Hook", payload, settings)
    job = decision.job
    assert (decision.action, job.kind, job.issue, job.requester) == ("enqueue", JobKind.CI, 4, BOT)
    assert job.details.pull_request is None and job.details.head_sha == "a1" * 20  # no MR named: the worker looks
    assert job.installation_id == installation_of(REPO) and job.repo == REPO


def test_a_branch_and_an_mr_pipeline_failing_on_one_commit_ask_for_one_follow_up(settings: Settings) -> None:
    branch = run("Pipeline Hook", pipeline_hook(REPO, status="failed", mr_iid=None), settings, delivery="d-1").job
    mr = run("Pipeline Hook", pipeline_hook(REPO, status="failed", mr_iid=3, pipeline_id=32), settings, "d-2").job
    assert branch.delivery_id == mr.delivery_id  # one key: the ledger records one job for both hooks
    again = run("Pipeline Hook", pipeline_hook(REPO, status="failed", mr_iid=None, pipeline_id=33), settings, "d-3")
    assert again.job.delivery_id == branch.delivery_id  # a retried branch pipeline failing again: the same one
    newer = pipeline_hook(REPO, status="failed", mr_iid=None, sha="b2" * 20)
    assert run("Pipeline Hook", newer, settings).job.delivery_id != branch.delivery_id  # a new commit: a new one
    other_issue = pipeline_hook(REPO, status="failed", mr_iid=None, branch="mini-fix/issue-2")
    assert run("Pipeline Hook", other_issue, settings).job.delivery_id != branch.delivery_id


def test_branch_pipelines_of_a_person_a_tag_or_another_branch_get_none(settings: Settings) -> None:
    ours = pipeline_hook(REPO, status="failed", mr_iid=None)
    assert run("Pipeline Hook", ours, settings).action == "enqueue"
    person = pipeline_hook(REPO, status="failed", mr_iid=None, user="alice")
    other = pipeline_hook(REPO, status="failed", mr_iid=None, branch="feature/x")
    tag = pipeline_hook(REPO, status="failed", mr_iid=None)
    tag["object_attributes"]["tag"] = True  # a tag named mini-fix/issue-1 is no branch of mini-fix's
    running = pipeline_hook(REPO, status="running", mr_iid=None)
    for payload in (person, other, tag, running):
        assert run("Pipeline Hook", payload, settings).action == "ignore"
    assert "tag" in run("Pipeline Hook", tag, settings).reason


def test_the_configured_bot_user_counts_for_pipelines(settings: Settings) -> None:
    payload = pipeline_hook(REPO, status="failed", user="minifix")
    assert run("Pipeline Hook", payload, settings).action == "ignore"
    named = settings.model_copy(update={"gitlab_bot_username": "minifix"})
    assert run("Pipeline Hook", payload, named).action == "enqueue"


@pytest.mark.parametrize("event", ["Push Hook", "Tag Push Hook", "Job Hook", ""])
def test_other_events_are_ignored(settings: Settings, event: str) -> None:
    assert run(event, labeled(REPO, 5), settings).action == "ignore"


def test_an_issue_opened_with_the_label_starts_a_fix(settings: Settings) -> None:
    payload = issue_hook(REPO, 9, action="open", previous=[], current=["mini-fix"])
    assert run("Issue Hook", payload, settings).job.issue == 9
    assert run("Confidential Issue Hook", payload, settings).action == "enqueue"


def test_an_edited_note_is_no_new_command_but_a_note_without_action_is(settings: Settings) -> None:
    edited = note_hook(REPO, 4, "/agent retry")
    edited["object_attributes"]["action"] = "update"
    assert run("Note Hook", edited, settings).action == "ignore"
    older = note_hook(REPO, 4, "/agent retry")  # GitLab before 16.x sends no `action` on note hooks
    del older["object_attributes"]["action"]
    assert run("Note Hook", older, settings).action == "enqueue"
