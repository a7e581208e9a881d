"""What each kind of job is in the worker, as one object: may it run, who asked, what its task says, what it
answers on GitHub. `kind_of` chooses it once from the job's kind (the webhook route table's `JobKind`); the
pipeline calls the object and never tests `job.kind` itself.

A fix is the base; a retry adds what reviewers said on the PR since the last run; a CI or review follow-up runs
only on the App's PR for its issue (`followup.gate`) and is re-checked before its push; `/agent help` and
`/agent stop` are control kinds, acting on a run instead of making one.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.github.gateway import Comment, GitHubGateway, Issue, can_write
from bot.jobs import Job, JobKind, JobOutcome, JobStatus
from bot.pipeline.task import followup
from bot.pipeline.task.feedback import review_feedback
from bot.pipeline.task.followup import IssueJobs
from bot.pipeline.task.issue import build_task
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings


class Kind:
    """What a job kind does; as it stands, a fix's (a writer's label on an issue): each other kind changes a part."""

    control = False  # acts on an issue's run instead of making one (`admit.control`)
    retry = False  # the status comment calls the run a retry
    counted = False  # its run, once started, counts toward the PR's `ci_followups` (`followup.ci_done`)

    def locate(self, job: Job, gh: GitHubGateway) -> Job | JobOutcome:
        """The job with what it is about found (a follow-up's PR), or how it ends when that is gone."""
        return job

    def gate(self, job: Job, gh: GitHubGateway) -> JobOutcome | None:
        """How the job ends before anything else (None: it goes on)."""
        return None

    def requester_role(self, job: Job, gh: GitHubGateway) -> str:
        """The requester's role on the repository, which must allow writing."""
        return gh.permission(job.requester)

    def prepare(
        self,
        job: Job,
        gh: GitHubGateway,
        config: RepoConfig,
        settings: Settings,
        issue_jobs: IssueJobs | None,
        carried: Sequence[Job] = (),
    ) -> Job | JobOutcome:
        """The run's job with every carried ask's new information read, or how it ends before a run."""
        return followup.prepare(job, gh, config, settings, issue_jobs, carried)

    def run_note(self, job: Job) -> str:
        """What the status comment says started the run ("" for a plain one)."""
        return followup.run_note(job)

    def task(self, job: Job, gh: GitHubGateway, issue: Issue, status_comment: int | None) -> str:
        """The agent's task: the issue, writers' comments, the job's guidance, the carried asks' news."""
        comments = self._comments(gh, issue.number, status_comment)
        task = build_task(issue, comments, guidance=job.guidance, can_write=lambda user: can_write(gh.permission(user)))
        news = followup.task_text(job)
        return f"{task}\n\n{news}" if news else task

    def recheck(self, job: Job, gh: GitHubGateway) -> str | None:
        """After the run, before its push: why it may no longer push ("merged", "closed"), or None."""
        return None

    def answer(self, job: Job, gh: GitHubGateway, run_id: str) -> None:
        """After a run that pushed: what it says on the PR about the asks it carried."""
        followup.answer(job, gh, run_id)

    def _comments(self, gh: GitHubGateway, number: int, status_comment: int | None) -> list[Comment]:
        return gh.list_comments(number)


class Fix(Kind):
    """A fix: the issue, its writers' comments, the label's guidance."""


class Retry(Kind):
    """`/agent retry`: a fix again, on the PR, told what reviewers said since the last run."""

    retry = True

    def _comments(self, gh: GitHubGateway, number: int, status_comment: int | None) -> list[Comment]:
        comments = gh.list_comments(number)
        return comments + review_feedback(gh, number, comments, status_comment)


class FollowUp(Kind):
    """A CI or review follow-up: only on the App's own open PR for the issue, re-checked before its push."""

    def gate(self, job: Job, gh: GitHubGateway) -> JobOutcome | None:
        return followup.gate(job, gh)

    def recheck(self, job: Job, gh: GitHubGateway) -> str | None:
        return followup.recheck_pr(job, gh)


class CiFollowUp(FollowUp):
    """A CI follow-up: sent by the App itself (`followup.gate` checks the login), so it may run it."""

    counted = True

    def locate(self, job: Job, gh: GitHubGateway) -> Job | JobOutcome:
        found = followup.locate(job, gh)
        return found if found is not None else JobOutcome(JobStatus.CANCELLED, error=followup.NO_OPEN_PR)

    def requester_role(self, job: Job, gh: GitHubGateway) -> str:
        return "write"


class Control(Kind):
    """`/agent help` and `/agent stop`: answered by `admit.control`, never a run."""

    control = True


KINDS: dict[JobKind, Kind] = {
    JobKind.FIX: Fix(),
    JobKind.RETRY: Retry(),
    JobKind.CI: CiFollowUp(),
    JobKind.REVIEW: FollowUp(),
    JobKind.HELP: Control(),
    JobKind.STOP: Control(),
}


def kind_of(job: Job) -> Kind:
    """The job's kind, chosen once."""
    return KINDS[job.kind]
