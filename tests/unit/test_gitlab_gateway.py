"""GitLabGateway against the fake GitLab over real HTTP: each mapping onto the gateway protocol's shapes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.forge_ids import mr_number
from bot.github.gateway import GitHubError, RateLimited, can_write, git_username
from bot.gitlab.gateway import GITLAB_CI, GitLabForge, GitLabGateway
from bot.gitlab.traces import clean_trace
from tests.support.fake_gitlab import DEVELOPER, MAINTAINER, OWNER, REPORTER, FakeGitLab

PROJECT = "acme/tools/calc"
FILES = {"calc.py": "def add(a, b):\n    return a - b\n", ".gitlab/mini-fix.yml": "label: fixme\n"}


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    fake = FakeGitLab()
    fake.start()
    fake.add_project(PROJECT, FILES)
    yield fake
    fake.stop()


def gateway(fake: FakeGitLab, **kwargs: object) -> GitLabGateway:
    return GitLabForge(fake.base_url, fake.bot_token, **kwargs).for_repo(-1, PROJECT)  # type: ignore[arg-type]


def push_branch(fake: FakeGitLab, tmp_path: Path, branch: str) -> str:
    """A person pushes `branch` with one more commit (straight into the bare repository)."""
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(fake.projects[PROJECT]["bare"]), str(work)], check=True)
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git = ["git", "-C", str(work), "-c", "user.name=P", "-c", "user.email=p@example.com"]
    subprocess.run([*git, "commit", "-qam", "fix"], check=True)
    subprocess.run([*git, "push", "-q", "origin", f"HEAD:refs/heads/{branch}"], check=True)
    sha = fake.branch_head(PROJECT, branch)
    assert sha
    return sha


def test_roles_come_from_members_all_with_inherited_group_members(gitlab: FakeGitLab) -> None:
    gitlab.set_access("acme", "grace", MAINTAINER)  # a group member: only members/all shows them on the project
    gitlab.set_access(PROJECT, "dev", DEVELOPER)
    gitlab.set_access(PROJECT, "rep", REPORTER)
    gitlab.set_access("acme/tools", "own", OWNER)
    gitlab.add_user("stranger")
    gh = gateway(gitlab)
    roles = {u: gh.permission(u) for u in ("grace", "dev", "rep", "own", "stranger", "nobody-at-all")}
    assert roles == {"grace": "maintain", "dev": "write", "rep": "read", "own": "admin", "stranger": "none",
                     "nobody-at-all": "none"}  # fmt: skip
    assert [u for u, r in roles.items() if can_write(r)] == ["grace", "dev", "own"]


def test_issue_notes_skip_system_notes_and_mark_the_bots_own(gitlab: FakeGitLab) -> None:
    iid = gitlab.add_issue(PROJECT, "add() subtracts", "add(2, 3) is -1", author="alice")
    gitlab.add_note(PROJECT, iid, "added ~mini-fix label", "alice", system=True)
    gitlab.add_note(PROJECT, iid, "/agent retry please", "alice")
    gh = gateway(gitlab)
    cid = gh.create_comment(iid, "status")
    issue = gh.get_issue(iid)
    assert (issue.number, issue.title, issue.body, issue.author, issue.state) == (
        iid, "add() subtracts", "add(2, 3) is -1", "alice", "open")  # fmt: skip
    assert not issue.is_pull_request
    found = gh.list_comments(iid)
    assert [(c.author, c.body) for c in found] == [("alice", "/agent retry please"), ("mini-fix-bot[bot]", "status")]
    gh.update_comment(cid, "status, edited in place")
    [note] = [n for n in gitlab.notes_on(PROJECT, iid) if n["id"] == cid]
    assert note["body"] == "status, edited in place" and note["_edits"] == 1
    fresh = gateway(gitlab)  # another process: it learns the note's issue by listing it, as the status lookup does
    with pytest.raises(GitHubError):
        fresh.update_comment(cid, "unknown parent")
    fresh.list_comments(iid)
    fresh.update_comment(cid, "again")
    assert note["body"] == "again"


def test_reactions_are_award_emoji_with_gitlabs_names(gitlab: FakeGitLab) -> None:
    iid = gitlab.add_issue(PROJECT, "t")
    nid = gitlab.add_note(PROJECT, iid, "/agent retry", "alice")
    gh = gateway(gitlab)
    gh.add_reaction(iid, "rocket")
    gh.add_reaction(iid, "eyes", comment_id=nid)
    gh.add_reaction(iid, "+1")
    gh.add_reaction(iid, "+1")  # already awarded: GitLab's 404 is logged, not raised
    assert [(a["name"], a["_note"]) for a in gitlab.award_emoji] == [("rocket", None), ("eyes", nid),
                                                                     ("thumbsup", None)]  # fmt: skip


def test_a_merge_request_is_a_draft_pull_request_numbered_apart_from_issues(gitlab: FakeGitLab, tmp_path: Path) -> None:
    iid = gitlab.add_issue(PROJECT, "add() subtracts")
    sha = push_branch(gitlab, tmp_path, f"mini-fix/issue-{iid}")
    gh = gateway(gitlab)
    assert gh.find_open_pr(f"mini-fix/issue-{iid}") is None
    pr = gh.create_pr(title="add() subtracts", body=f"Fixes #{iid}\n\nmore", head=f"mini-fix/issue-{iid}", base="main")
    [mr] = gitlab.merge_requests
    assert mr["title"] == "Draft: add() subtracts" and mr["description"].startswith(f"Closes #{iid}\n")
    assert pr.number == mr_number(mr["iid"]) and pr.number != iid and pr.draft and pr.head_sha == sha
    assert (
        pr.head_repo == PROJECT and pr.author == "mini-fix-bot[bot]" and pr.url.endswith(f"/merge_requests/{mr['iid']}")
    )
    assert gh.find_open_pr(f"mini-fix/issue-{iid}") == pr
    assert gh.list_open_prs() == [pr]
    gh.update_pr(pr.number, title="add() subtracts", body=f"Fixes #{iid}\n\nnew")
    assert mr["title"] == "Draft: add() subtracts" and mr["description"] == f"Closes #{iid}\n\nnew"
    mr["title"] = "add() subtracts"  # a person marks it ready: an update keeps it so
    gh.update_pr(pr.number, title="add() subtracts", body="b")
    assert mr["title"] == "add() subtracts" and not gh.get_pr(pr.number).draft
    as_issue = gh.get_issue(pr.number)
    assert as_issue.is_pull_request and as_issue.number == pr.number
    mr_note = gh.create_comment(pr.number, "trajectory")
    assert [n["id"] for n in gitlab.notes_on(PROJECT, mr["iid"], "merge_requests")] == [mr_note]
    assert gitlab.notes_on(PROJECT, iid) == []  # issue #1 and MR !1 share an iid: the number kept them apart
    gitlab.close_mr(PROJECT, mr["iid"], merged=True)
    merged = gh.get_pr(pr.number)
    assert merged.state == "closed" and merged.merged


def test_review_comments_and_a_review_from_diff_threads(gitlab: FakeGitLab, tmp_path: Path) -> None:
    gitlab.add_issue(PROJECT, "t")
    push_branch(gitlab, tmp_path, "mini-fix/issue-1")
    gh = gateway(gitlab)
    pr = gh.create_pr(title="t", body="Fixes #1", head="mini-fix/issue-1", base="main")
    iid = pr.number - mr_number(0)
    gitlab.add_note(PROJECT, iid, "looks odd", "rita", kind="merge_requests")
    first = gitlab.add_diff_note(PROJECT, iid, "use +", "rita", "calc.py", 2)
    done = gitlab.add_diff_note(PROJECT, iid, "typo", "rita", "calc.py", 1)
    gitlab.resolve(done)
    gitlab.add_diff_note(PROJECT, iid, "someone else's", "sam", "calc.py", 1)
    assert [c.body for c in gh.list_comments(pr.number)] == ["looks odd"]
    assert [c.body for c in gh.list_review_comments(pr.number)] == [
        "On `calc.py` line 2:\nuse +",
        "On `calc.py` line 1:\ntypo",
        "On `calc.py` line 1:\nsomeone else's",
    ]
    review = gh.get_review(pr.number, gitlab.user_id("rita"))
    assert (review.author, review.state) == ("rita", "changes_requested")
    assert [(c.id, c.path, c.line, c.body) for c in review.comments] == [(first, "calc.py", 2, "use +")]


TRACE = (
    "\x1b[0KRunning with gitlab-runner 17.0\n"
    'section_start:1700000000:step_script\r\x1b[0K\x1b[0K\x1b[36;1mExecuting "step_script"\x1b[0;m\n'
    "$ pytest\n"
    "50%\r100% done\n"
    "\x1b[31;1mFAILED test_calc.py::test_add - assert -1 == 5\x1b[0m\n"
    "section_end:1700000001:step_script\r\x1b[0K\n"
    "\x1b[31;1mERROR: Job failed: exit code 1\x1b[0;m\n"
)


def test_failed_jobs_are_check_runs_and_traces_are_cleaned_tails(gitlab: FakeGitLab, tmp_path: Path) -> None:
    sha = push_branch(gitlab, tmp_path, "mini-fix/issue-1")
    gitlab.add_pipeline(PROJECT, sha, "mini-fix/issue-1", [("lint", "failed", "old")])
    gitlab.add_pipeline(PROJECT, sha, "mini-fix/issue-1", [("test", "failed", TRACE), ("build", "success", "ok")])
    gh = gateway(gitlab)
    [run] = gh.check_runs(sha)
    assert (run.name, run.conclusion, run.app) == ("test", "failure", GITLAB_CI)
    text = gh.job_log(run.id)
    assert "\x1b" not in text and "section_" not in text and "\r" not in text
    assert 'Executing "step_script"' in text and "FAILED test_calc.py::test_add" in text and "100% done" in text
    assert "50%" not in text  # drawn over by the `\r`
    assert gh.check_runs("0" * 40) == []


def test_a_long_trace_keeps_its_end_only() -> None:
    from bot.gitlab import gateway as gw

    big = "x" * 100 + "\n" + "line\n" * 300_000 + "ERROR: Job failed\n"
    fake = FakeGitLab()
    fake.start()
    try:
        fake.add_project(PROJECT, FILES)
        fake.add_pipeline(PROJECT, "a" * 40, "main", [("t", "failed", big)])
        gh = gateway(fake)
        [run] = gh.check_runs("a" * 40)
        text = gh.job_log(run.id)
    finally:
        fake.stop()
    assert text.endswith("ERROR: Job failed\n") and "x" * 100 not in text
    assert len(text.encode()) <= gw.TRACE_TAIL_BYTES + 200 and "start of the log left out" in text


def test_clean_trace_strips_collapsed_section_options() -> None:
    raw = "section_start:1:prepare[collapsed=true]\r\x1b[0Kprep\nsection_end:1:prepare\r\x1b[0K\nok"
    assert clean_trace(raw) == "prep\n\nok"


def test_files_labels_repo_and_identity(gitlab: FakeGitLab) -> None:
    gh = gateway(gitlab)
    assert gh.read_file(".gitlab/mini-fix.yml") == "label: fixme\n"
    assert gh.read_file(".gitlab/none.yml") is None
    assert gateway(gitlab).read_file(".gitlab/mini-fix.yml") == "label: fixme\n"  # before any get_repo
    repo = gh.get_repo()
    assert (repo.full_name, repo.default_branch, repo.private) == (PROJECT, "main", True)
    assert repo.clone_url == f"{gitlab.base_url}/{PROJECT}.git"
    gh.create_label("mini-fix", "0e8a16", "mini-fix fixes it")
    gh.create_label("mini-fix", "0e8a16", "again")  # exists: left alone
    assert gh.list_labels() == ["mini-fix"] and gitlab.labels[PROJECT][0]["color"] == "#0e8a16"
    who = gh.bot_identity()
    assert who.name == "mini-fix-bot" and who.email.endswith("-mini-fix-bot@noreply")
    credential = gh.git_credential()
    assert credential.token == gitlab.bot_token and git_username(credential.token) == "oauth2"


def test_team_member_is_a_group_membership(gitlab: FakeGitLab) -> None:
    gitlab.set_access("acme/core", "ada", DEVELOPER)
    gitlab.add_user("bob")
    gh = gateway(gitlab)
    assert gh.team_member("core", "ada") and gh.team_member("acme/core", "ada")
    assert not gh.team_member("core", "bob") and not gh.team_member("core", "ghost")


def test_a_429_is_waited_out_then_raised_as_rate_limited(gitlab: FakeGitLab) -> None:
    iid = gitlab.add_issue(PROJECT, "t")
    waits: list[float] = []
    gh = gateway(gitlab, sleep=waits.append)
    gitlab.faults.add(
        "GET", r"/issues/\d+$", 429, count=2, headers={"Retry-After": "7"}, body={"message": "Retry later"}
    )
    assert gh.get_issue(iid).title == "t" and waits == [7.0, 7.0]
    gitlab.faults.add("GET", r"/issues/\d+$", 429, count=None, headers={"Retry-After": "3600"})
    with pytest.raises(RateLimited) as caught:
        gh.get_issue(iid)
    assert caught.value.retry_after == 3600 and waits == [7.0, 7.0]  # past the bound: deferred, never slept


def test_the_token_is_never_in_an_error_message(gitlab: FakeGitLab) -> None:
    token = gitlab.bot_token
    gitlab.faults.add("GET", r"/issues/\d+$", 500, count=None, body={"message": f"boom for {token}"})
    gh = gateway(gitlab, sleep=lambda _: None)
    with pytest.raises(GitHubError) as caught:
        gh.get_issue(1)
    assert token not in str(caught.value) and "HTTP 500" in str(caught.value)
    bad = GitLabForge(gitlab.base_url, "glpat-wrong-token-123456").for_repo(-1, PROJECT)
    with pytest.raises(GitHubError) as refused:
        bad.get_repo()
    assert "glpat-wrong-token-123456" not in str(refused.value) and "401" in str(refused.value)


def test_the_notes_remembered_for_edits_are_bounded() -> None:
    from bot.gitlab.gateway import NoteParents

    parents = NoteParents()
    for note in range(NoteParents.MAX_NOTES + 5):
        parents[note] = 7
    parents[3] = 8  # seen again: kept as the newest
    assert len(parents) == NoteParents.MAX_NOTES and parents.get(0) is None and parents.get(3) == 8
    assert parents.get(NoteParents.MAX_NOTES + 4) == 7


def test_every_page_of_notes_is_read(gitlab: FakeGitLab) -> None:
    iid = gitlab.add_issue(PROJECT, "t")
    for n in range(130):
        gitlab.add_note(PROJECT, iid, f"note {n}", "alice")
    found = gateway(gitlab).list_comments(iid)
    assert [c.body for c in found] == [f"note {n}" for n in range(130)]
    assert len([p for _, p in gitlab.requests if p.endswith("/notes")]) == 2  # 100 a page


def test_the_fake_takes_private_token_or_bearer_and_a_project_by_id_or_encoded_path(gitlab: FakeGitLab) -> None:
    import httpx

    api = f"{gitlab.base_url}/api/v4/projects"
    by_path = httpx.get(f"{api}/acme%2Ftools%2Fcalc", headers={"PRIVATE-TOKEN": gitlab.bot_token})
    by_id = httpx.get(f"{api}/1", headers={"Authorization": f"Bearer {gitlab.bot_token}"})
    assert by_path.json()["path_with_namespace"] == by_id.json()["path_with_namespace"] == PROJECT
    assert httpx.get(f"{api}/1").status_code == 401
    assert httpx.get(f"{api}/1", headers={"PRIVATE-TOKEN": "glpat-made-up"}).status_code == 401
