"""A CI follow-up that names no PR (a GitLab branch pipeline's hook names no merge request): the worker finds the
open PR from the issue's branch, for the job it runs and for one that waited and is folded into another run."""

from __future__ import annotations

from dataclasses import replace

from bot.github.gateway import BotIdentity, PullRequest
from bot.jobs import Job, JobDetails, JobKind, JobOutcome, JobStatus
from bot.pipeline.task import asks
from bot.pipeline.task.kinds import kind_of

BOT = "mini-fix-bot"
SHA = "a1" * 20
MR = 1_000_000_003  # `forge_ids.mr_number(3)`


class Project:
    """The reads locating and folding make; anything else is a test failure (AttributeError)."""

    def __init__(self, open_mr: bool = True) -> None:
        self.open_mr = open_mr
        self.looked_for: list[str] = []
        self.comments: list[tuple[int, str]] = []

    def find_open_pr(self, branch: str) -> PullRequest | None:
        self.looked_for.append(branch)
        if not self.open_mr:
            return None
        return PullRequest(MR, "https://gitlab.example.org/mr/3", "", draft=True, head=branch, head_sha=SHA)

    def get_pr(self, number: int) -> PullRequest:
        assert number == MR, f"read PR {number}, not the branch's MR"
        return PullRequest(MR, "https://gitlab.example.org/mr/3", "", draft=True, head="mini-fix/issue-4", head_sha=SHA)

    def bot_identity(self) -> BotIdentity:
        return BotIdentity(BOT, "bot@example.org")

    def create_comment(self, number: int, body: str) -> None:
        self.comments.append((number, body))


def ci(pull: int | None = None, job_id: str = "j1") -> Job:
    details = JobDetails(pull_request=pull, head_sha=SHA)
    return Job(job_id, JobKind.CI, -5, "acme/tools/calc", 4, BOT, "k", details=details)


def test_a_ci_follow_up_naming_no_pr_is_about_the_open_pr_of_its_issues_branch() -> None:
    project = Project()
    found = kind_of(ci()).locate(ci(), project)  # type: ignore[arg-type]
    assert isinstance(found, Job) and found.details.pull_request == MR and found.details.head_sha == SHA
    assert project.looked_for == ["mini-fix/issue-4"]
    named = kind_of(ci()).locate(ci(pull=MR), project)  # type: ignore[arg-type]
    assert named == ci(pull=MR) and project.looked_for == ["mini-fix/issue-4"]  # an MR pipeline's: no lookup


def test_without_an_open_pr_the_ci_follow_up_ends_quietly() -> None:
    project = Project(open_mr=False)
    ended = kind_of(ci()).locate(ci(), project)  # type: ignore[arg-type]
    assert isinstance(ended, JobOutcome) and ended.status == JobStatus.CANCELLED
    assert "no open pull request" in str(ended.error) and project.comments == []


class Waiting:
    """The ledger's side of folding: one waiting ask; what was settled, recorded."""

    def __init__(self, ask: Job) -> None:
        self.ask = ask
        self.settled: list[tuple[str, JobStatus, str]] = []

    def ledger(self) -> asks.AskLedger:
        def settle(job_id: str, status: JobStatus, why: str) -> bool:
            self.settled.append((job_id, status, why))
            return True

        return asks.AskLedger(lambda repo, issue: [self.ask], settle)


def test_a_waiting_branch_pipeline_ask_is_carried_with_the_pr_it_is_about() -> None:
    waiting = Waiting(ci(job_id="ask"))
    lead = replace(ci(pull=MR, job_id="lead"), kind=JobKind.REVIEW, requester="alice")
    [carried] = asks.fold(lead, Project(), waiting.ledger())  # type: ignore[arg-type]
    assert carried.id == "ask" and carried.details.pull_request == MR
    assert waiting.settled == [("ask", JobStatus.FOLDED, "carried by job lead")]


def test_a_waiting_branch_pipeline_ask_whose_pr_is_gone_is_cancelled_quietly() -> None:
    waiting = Waiting(ci(job_id="ask"))
    project = Project(open_mr=False)
    assert asks.fold(ci(pull=MR, job_id="lead"), project, waiting.ledger()) == []  # type: ignore[arg-type]
    [(job_id, status, why)] = waiting.settled
    assert (job_id, status) == ("ask", JobStatus.CANCELLED) and "no open pull request" in why
    assert project.comments == []
