"""One run's state, handed forward through the pipeline's steps and read by the final report."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bot.agent.config import MiniFixAgentConfig, ModelConfig
from bot.agent.loop import AgentResult
from bot.github.gateway import GitHubGateway
from bot.jobs import Job
from bot.pipeline.candidates import Candidate
from bot.pipeline.publish.pr import Published
from bot.pipeline.publish.status import StatusComment
from bot.pipeline.task.kinds import Kind
from bot.repo_config.schema import RepoConfig


@dataclass
class RunState:
    """One run, handed forward through the steps: what it was given, then what it has learned, for the report."""

    job: Job
    gh: GitHubGateway
    number: int
    run_id: str
    status: StatusComment  # what the run learns goes there as events (`StatusComment.say`)
    agent: MiniFixAgentConfig  # the deployment's agent config with the repository's own on top
    model: ModelConfig
    cancel: threading.Event
    kind: Kind  # what the job's kind does (`task.kinds`), chosen once
    result: AgentResult | None = None
    published: Published | None = None
    paths: list[str] = field(default_factory=list)
    config: RepoConfig = field(default_factory=RepoConfig)
    test: dict[str, object] | None = None  # the chosen attempt's `test` verdict, from a fresh sandbox
    count: int = 1  # attempts this job makes
    candidates: list[Candidate] = field(default_factory=list)  # every attempt, once they have all ended
    table: str = ""  # the attempts table (several attempts only), for the PR body or the outcome comment
    link_run_id: str | None = None  # the run id whose trajectory the links show (the chosen attempt's)
    wip: str = ""  # the limit that ended the run whose partial change is published as work in progress
