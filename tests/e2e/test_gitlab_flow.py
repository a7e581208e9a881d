"""GitLab end to end: GitLab's hooks on `POST /webhook/gitlab` → ledger → worker → real sandbox → a draft merge
request on the fake GitLab (REST and git smart HTTP on 127.0.0.1), with a scripted model.

The same scenarios as GitHub's flow: label → draft MR, `/agent retry` on the MR, `/agent stop`, a failed pipeline
on the bot's push (an MR's or a branch's) → one CI follow-up, a non-developer refused, and the token never posted
anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_github_flow import FILES, FIX, jobs, runner_env, wait_for
from tests.support.app_process import AppProcess
from tests.support.fake_github import throwaway_key
from tests.support.fake_gitlab import BOT, DEVELOPER, REPORTER, FakeGitLab
from tests.support.gitlab_hooks import (
    SECRET,
    body,
    headers,
    labeled,
    merge_request_hook,
    note_hook,
    pipeline_hook,
)
from tests.support.model_server import ScriptedModelServer, bash_reply

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

PROJECT = "acme/tools/calc"  # in a subgroup: members inherited from `acme`, a path that needs URL-encoding
BRANCH_OF = "mini-fix/issue-{}"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    fake = FakeGitLab()
    fake.start()
    fake.add_project(PROJECT, FILES)
    fake.add_user("alice", user_id=100)  # the id a Merge Request Hook names its first reviewer by
    fake.set_access("acme", "alice", DEVELOPER)  # inherited from the group: only members/all shows it
    fake.set_access(PROJECT, "rita", REPORTER)
    yield fake
    fake.stop()


def app_env(
    gitlab: FakeGitLab, model: ScriptedModelServer, data_dir: Path, *, github: bool = True, **extra: str
) -> dict[str, str]:
    github_app = {
        "MINIFIX_APP_ID": "1234",  # a GitHub App too: one deployment serves both forges
        "MINIFIX_PRIVATE_KEY": throwaway_key(),
        "MINIFIX_WEBHOOK_SECRET": "unused-github-secret-0000",
        "MINIFIX_GITHUB_API_URL": "http://127.0.0.1:9",  # never called: every job here is GitLab's
    }
    return {
        **(github_app if github else {}),  # without: a GitLab-only deployment (self-managed GitLab, no GitHub App)
        "MINIFIX_GITLAB_URL": gitlab.base_url,
        "MINIFIX_GITLAB_TOKEN": gitlab.bot_token,
        "MINIFIX_GITLAB_WEBHOOK_SECRET": SECRET,
        "MINIFIX_GITLAB_BOT_USERNAME": BOT,
        **runner_env(model, data_dir),
        **extra,
    }


def hook(app: AppProcess, payload: dict[str, Any]) -> httpx.Response:
    """Deliver a GitLab hook as GitLab does (its token, event and UUID headers)."""
    return httpx.post(f"{app.url}/webhook/gitlab", content=body(payload), headers=headers(payload), timeout=10)


def statuses(data: Path, app: AppProcess) -> list[str]:
    return [j["status"] for j in jobs(data, app.env)]


def secrets_absent(gitlab: FakeGitLab, model: ScriptedModelServer, data: Path) -> None:
    """The token is in no note, MR description, model request or trajectory."""
    posted = json.dumps([n["body"] for n in gitlab.notes]) + json.dumps(
        [m["description"] for m in gitlab.merge_requests]
    )
    seen = json.dumps(model.requests) + "".join(p.read_text() for p in data.rglob("trajectory.json"))
    assert gitlab.bot_token not in posted and gitlab.bot_token not in seen


@dataclass
class FirstRun:
    """A labelled issue whose first fix has opened its draft MR and finished, with the app still serving."""

    app: AppProcess
    model: ScriptedModelServer
    data: Path
    iid: int
    branch: str
    mr: dict[str, Any]

    def wait_for_second(self, what: str) -> None:
        wait_for(lambda: statuses(self.data, self.app) == ["succeeded", "succeeded"], 240, what, self.app.log)


@contextmanager
def first_run(gitlab: FakeGitLab, tmp_path: Path, follow: list[str]) -> Iterator[FirstRun]:
    """Alice labels an issue; the scripted model fixes it (FIX), then answers the follow-up with `follow`. The app
    stops when the block ends."""
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 3) returns -1", author="alice")
    data = tmp_path / "data"
    with ScriptedModelServer([*FIX, *follow]) as model:
        app = AppProcess(app_env(gitlab, model, data), tmp_path / "app.log").start()
        try:
            answer = hook(app, labeled(PROJECT, iid, user="alice"))
            assert answer.status_code == 202, answer.text
            mr = wait_for(lambda: gitlab.merge_requests, 240, "a merge request", app.log)[0]
            wait_for(lambda: statuses(data, app) == ["succeeded"], 90, "run 1", app.log)
            yield FirstRun(app, model, data, iid, BRANCH_OF.format(iid), mr)
        finally:
            app.stop()


def test_label_opens_a_draft_mr_and_a_retry_on_it_updates_the_same_mr(gitlab: FakeGitLab, tmp_path: Path) -> None:
    retry = [
        bash_reply("cat calc.py", "Follow the guidance."),
        bash_reply("printf 'def add(a, b):\\n    return sum((a, b))\\n' > calc.py && python3 -m unittest -q"),
        bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nadd() uses sum().\\n'", "Submit."),
    ]
    with first_run(gitlab, tmp_path, retry) as run:
        first_head = gitlab.branch_head(PROJECT, run.branch)
        retry_note = note_hook(PROJECT, run.mr["iid"], "/agent retry use sum() instead", on="MergeRequest",
                               branch=run.branch, user="alice")  # fmt: skip
        assert hook(run.app, retry_note).status_code == 202
        run.wait_for_second("run 2")
    iid, mr, model, data = run.iid, run.mr, run.model, run.data
    assert mr["title"] == "Draft: add() subtracts" and mr["source_branch"] == BRANCH_OF.format(iid)
    assert mr["description"].startswith(f"Closes #{iid}\n") and len(gitlab.merge_requests) == 1
    assert "use sum() instead" in model.requests[3]["messages"][1]["content"]
    head = gitlab.branch_head(PROJECT, BRANCH_OF.format(iid))
    assert head != first_head and "sum((a, b))" in gitlab.show(PROJECT, BRANCH_OF.format(iid), "calc.py")
    assert gitlab.show(PROJECT, "main", "calc.py") == FILES["calc.py"]  # the protected default branch untouched
    assert "add() uses sum()" in mr["description"] and mr["title"].startswith("Draft:")
    status = [n for n in gitlab.notes_on(PROJECT, iid) if "<!-- mini-fix:status -->" in n["body"]]
    assert len(status) == 2 and all(n["_edits"] > 0 for n in status)  # one per run, each edited in place
    assert mr["web_url"] in status[0]["body"]
    assert any("mini-fix trajectory" in n["body"] for n in gitlab.notes_on(PROJECT, mr["iid"], "merge_requests"))
    assert any(a["name"] == "rocket" for a in gitlab.award_emoji)
    secrets_absent(gitlab, model, data)


def test_a_reporter_is_refused_with_one_note_and_no_run(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """On a GitLab-only deployment: `mini-fix serve` starts, its worker serves GitLab, GitHub's route says 404."""
    iid = gitlab.add_issue(PROJECT, "please fix", author="rita")
    data = tmp_path / "data"
    with ScriptedModelServer(FIX) as model:
        app = AppProcess(app_env(gitlab, model, data, github=False), tmp_path / "app.log").start()
        try:
            assert not any(name in app.env for name in ("MINIFIX_APP_ID", "MINIFIX_WEBHOOK_SECRET"))
            github_hook = httpx.post(f"{app.url}/webhook", content=b"{}", timeout=10)
            assert github_hook.status_code == 404 and "GitHub is not configured" in github_hook.text
            assert hook(app, labeled(PROJECT, iid, user="rita")).status_code == 202
            wait_for(lambda: statuses(data, app) == ["denied"], 60, "denied", app.log)
        finally:
            app.stop()
    notes = [n["body"] for n in gitlab.notes_on(PROJECT, iid)]
    assert len(notes) == 1 and "rita" in notes[0]
    assert model.requests == [] and gitlab.merge_requests == [] and gitlab.git_requests == []


def test_stop_cancels_the_running_fix(gitlab: FakeGitLab, tmp_path: Path) -> None:
    iid = gitlab.add_issue(PROJECT, "add() subtracts", author="alice")
    data = tmp_path / "data"
    with ScriptedModelServer([bash_reply("sleep 100"), *FIX[2:]]) as model:
        app = AppProcess(app_env(gitlab, model, data), tmp_path / "app.log").start()
        try:
            hook(app, labeled(PROJECT, iid, user="alice"))
            wait_for(lambda: len(model.requests) == 1, 180, "the first model request", app.log)
            assert hook(app, note_hook(PROJECT, iid, "/agent stop", user="alice")).status_code == 202
            said = wait_for(
                lambda: [n for n in gitlab.notes_on(PROJECT, iid) if "stopped" in n["body"]],
                90,
                "the status to say stopped",
                lambda: json.dumps([n["body"] for n in gitlab.notes], indent=1),
            )
            wait_for(lambda: "cancelled" in statuses(data, app), 30, "the fix to be cancelled", app.log)
        finally:
            app.stop()
    assert gitlab.merge_requests == [] and len(model.requests) == 1 and "alice" in said[0]["body"]
    assert not gitlab.branch_head(PROJECT, BRANCH_OF.format(iid))


def test_a_failed_pipeline_on_the_bots_push_gets_one_ci_follow_up(gitlab: FakeGitLab, tmp_path: Path) -> None:
    leaked = "glpat-" + "Q" * 20  # a token-shaped string the project's CI printed
    trace = (
        '\x1b[0Ksection_start:1767268800:step_script\r\x1b[0K\x1b[36;1mExecuting "step_script"\x1b[0;m\n'
        f"$ python3 -m unittest\ntoken={leaked}\nFAIL: test_add\nAssertionError: 6 != 5 (off by one)\n"
        "\x1b[0Ksection_end:1767268801:step_script\r\x1b[0K\n\x1b[31;1mERROR: Job failed: exit code 1\x1b[0;m\n"
    )
    follow = [
        bash_reply("printf 'def add(a, b):\\n    return a + b  # v2\\n' > calc.py", "Fix what CI said."),
        bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nfollow-up\\n'", "Submit."),
    ]
    with first_run(gitlab, tmp_path, follow) as run:
        branch, mr_iid = run.branch, run.mr["iid"]
        sha = str(gitlab.branch_head(PROJECT, branch))
        gitlab.add_pipeline(PROJECT, sha, branch, [("unit", "failed", trace)])
        pipe = pipeline_hook(PROJECT, status="failed", mr_iid=mr_iid, branch=branch, user=BOT, sha=sha)
        running = pipeline_hook(PROJECT, status="running", mr_iid=mr_iid, branch=branch, user=BOT, sha=sha)
        answers = [hook(run.app, running), hook(run.app, pipe), hook(run.app, pipe)]  # status changes, a redelivery
        assert all(a.status_code in (200, 202) for a in answers), [a.text for a in answers]
        run.wait_for_second("the follow-up")
    model, data = run.model, run.data
    assert [j["kind"] for j in jobs(data, run.app.env)] == ["ci", "fix"]  # one follow-up for three deliveries
    task = model.requests[3]["messages"][1]["content"]
    assert "CI failed on the previous change" in task and "AssertionError: 6 != 5" in task and "\x1b" not in task
    assert leaked not in json.dumps(model.requests) and leaked not in json.dumps([n["body"] for n in gitlab.notes])
    assert "# v2" in gitlab.show(PROJECT, branch, "calc.py") and len(gitlab.merge_requests) == 1
    secrets_absent(gitlab, model, data)


def test_a_failed_branch_pipeline_on_the_bots_push_gets_one_ci_follow_up_on_its_mr(
    gitlab: FakeGitLab, tmp_path: Path
) -> None:
    """GitLab's default pipelines are branch pipelines (`merge_request: null`): the worker finds the MR from the
    branch. A project running an MR pipeline too sends a second failed hook for the commit: still one follow-up."""
    trace = "$ python3 -m unittest\nFAIL: test_add\nAssertionError: 7 != 5 (branch pipeline)\n"
    follow = [
        bash_reply("printf 'def add(a, b):\\n    return a + b  # v3\\n' > calc.py", "Fix what CI said."),
        bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nfollow-up\\n'", "Submit."),
    ]
    with first_run(gitlab, tmp_path, follow) as run:
        branch, mr_iid = run.branch, run.mr["iid"]
        sha = str(gitlab.branch_head(PROJECT, branch))
        gitlab.add_pipeline(PROJECT, sha, branch, [("unit", "failed", trace)])
        on_branch = pipeline_hook(PROJECT, status="failed", mr_iid=None, branch=branch, user=BOT, sha=sha)
        on_mr = pipeline_hook(PROJECT, status="failed", mr_iid=mr_iid, branch=branch, user=BOT, sha=sha, pipeline_id=32)
        answers = [hook(run.app, on_branch), hook(run.app, on_mr)]
        assert [a.status_code for a in answers] == [202, 202], [a.text for a in answers]
        first, second = (a.json() for a in answers)
        assert first["action"] == second["action"] == "enqueue" and first["job_id"] == second["job_id"]
        assert (first["created"], second["created"]) == (True, False)  # the MR pipeline's hook: the same job
        run.wait_for_second("the follow-up")
    model, data = run.model, run.data
    assert [j["kind"] for j in jobs(data, run.app.env)] == ["ci", "fix"]
    task = model.requests[3]["messages"][1]["content"]
    assert "CI failed on the previous change" in task and "AssertionError: 7 != 5" in task
    assert "# v3" in gitlab.show(PROJECT, branch, "calc.py") and len(gitlab.merge_requests) == 1
    secrets_absent(gitlab, model, data)


def test_a_developers_requested_changes_get_one_review_follow_up(gitlab: FakeGitLab, tmp_path: Path) -> None:
    follow = [
        bash_reply("printf 'def add(x, y):\\n    return x + y\\n' > calc.py", "Do what the review asked."),
        bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nrenamed\\n'", "Submit."),
    ]
    with first_run(gitlab, tmp_path, follow) as run:
        branch, mr_iid = run.branch, run.mr["iid"]
        gitlab.add_diff_note(PROJECT, mr_iid, "Name the operands x and y.", "alice", "calc.py", 2)
        gitlab.add_diff_note(PROJECT, mr_iid, "And say why.", "alice", "calc.py", 1)
        diff_notes = [
            note_hook(PROJECT, mr_iid, text, on="MergeRequest", branch=branch, user="alice", diff=True)
            for text in ("Name the operands x and y.", "And say why.")
        ]
        state = merge_request_hook(PROJECT, mr_iid, action="update", branch=branch, user="alice",
                                   reviewers=[("alice", "requested_changes")],
                                   previous_reviewers=[("alice", "review_started")])  # fmt: skip
        answers = [hook(run.app, p) for p in (*diff_notes, state)]
        assert [a.json()["action"] for a in answers] == ["ignore", "ignore", "enqueue"], [a.text for a in answers]
        run.wait_for_second("the follow-up")
        rows = jobs(run.data, run.app.env)
    model = run.model
    assert [r["kind"] for r in rows] == ["review", "fix"]
    task = model.requests[3]["messages"][1]["content"]
    assert "Name the operands x and y." in task and "And say why." in task and "`calc.py` line 2" in task
    assert "return x + y" in gitlab.show(PROJECT, branch, "calc.py") and len(gitlab.merge_requests) == 1
    answer = [n["body"] for n in gitlab.notes_on(PROJECT, mr_iid, "merge_requests") if "review" in n["body"]]
    assert answer and "Name the operands" in answer[-1]
