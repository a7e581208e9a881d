"""One run's inputs (`Given`, read by the pipeline's steps) and what it learns (`RunState`, for the report)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bot.agent.loop import AgentResult
from bot.github.gateway import GitHubGateway
from bot.jobs import Job
from bot.pipeline.candidates import Candidate
from bot.pipeline.publish.pr import Published
from bot.pipeline.publish.status import StatusComment
from bot.pipeline.task.kinds import Kind
from bot.repo_config.schema import RepoConfig


@dataclass(frozen=True)
class Judged:
    """What the run takes from its judgement, in one value: for the PR body and the final report."""

    candidates: tuple[Candidate, ...] = ()  # every attempt, once they have all ended
    table: str = ""  # the attempts table (several attempts only), for the PR body or the outcome comment
    wip: str = ""  # the limit that ended the run whose partial change is published as work in progress
    result: AgentResult | None = None  # the chosen attempt's (or the one attempt's) agent result
    paths: tuple[str, ...] = ()  # the refused paths, when refusal ended the job
    test: dict[str, object] | None = None  # the chosen attempt's `test` verdict, from a fresh sandbox
    link_run_id: str | None = None  # the run id whose trajectory the links show (the chosen attempt's)


@dataclass(frozen=True)
class Given:
    """What a run is given and never changes: the steps read these, not the mutable `RunState`."""

    job: Job
    gh: GitHubGateway
    number: int
    run_id: str
    cancel: threading.Event
    kind: Kind


@dataclass
class RunState:
    """What one run has learned, recorded by `run._work` for the report (what it was given: `Given`)."""

    run_id: str
    status: StatusComment  # what the run learns goes there as events (`StatusComment.say`)
    judged: Judged = field(default_factory=Judged)  # what the judgement left, once it is known
    published: Published | None = None
    config: RepoConfig = field(default_factory=RepoConfig)
    count: int = 1  # attempts this job makes
