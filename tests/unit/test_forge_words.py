"""A GitLab job's texts name a merge request and `!iid`; a GitHub job's are unchanged."""

from __future__ import annotations

from bot.forge_ids import installation_of, mr_number
from bot.jobs import Outcome
from bot.render import forge_words, outcome, render


def test_a_gitlab_jobs_texts_say_merge_request_and_its_iid() -> None:
    with forge_words(installation_of("acme/calc")):
        task = render("followup_ci.md", pull=mr_number(3), sha="a" * 40, failures=[], unread=[])
        opened = outcome(Outcome.PR_OPENED, run={})
    assert "merge request !3" in task and "pull request" not in task and "1000000003" not in task
    assert opened.headline == "opened a merge request"


def test_a_github_jobs_texts_are_unchanged() -> None:
    with forge_words(4242):
        task = render("followup_ci.md", pull=12, sha="a" * 40, failures=[], unread=[])
    assert "pull request #12" in task
    assert outcome(Outcome.PR_OPENED, run={}).headline == "opened a pull request"  # outside any job: GitHub's words
