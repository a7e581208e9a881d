"""`.github/mini-fix.yml`: what a repository (or its organisation) may tune. Unset fields keep the deployment's."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_CI_FOLLOWUPS = 2
PYTHON_TEST_PATHS = ["test_*.py", "*_test.py", "tests/**", "test/**", "**/tests/**", "**/test/**"]


class Limits(BaseModel):
    """Budgets of one run; None keeps the deployment's default."""

    model_config = ConfigDict(extra="forbid")

    steps: int | None = Field(default=None, ge=1)
    """Model calls the agent may make (MINIFIX_STEP_LIMIT, else prompts/agent.yaml: 50)."""
    tokens: int | None = Field(default=None, ge=1)
    """Prompt plus completion tokens over the run (MINIFIX_TOKEN_LIMIT, else prompts/agent.yaml)."""
    wall_time: int | None = Field(default=None, ge=1)
    """Seconds the agent may run (MINIFIX_WALL_TIME_LIMIT, else prompts/agent.yaml)."""
    memory: str | None = Field(default=None, pattern=r"^\d+[bkmg]?$")
    """Sandbox memory limit such as `4g` (MINIFIX_SANDBOX_MEMORY)."""
    cpus: float | None = Field(default=None, gt=0)
    """Sandbox CPU quota in cores (MINIFIX_SANDBOX_CPUS)."""
    disk: str | None = Field(default=None, pattern=r"^\d+[bkmg]?$")
    """Size of the sandbox's working directory such as `2g` (MINIFIX_SANDBOX_DISK)."""


class Quotas(BaseModel):
    """An organisation's own quotas (bot/repo_config/quotas.py): each may only lower the operator's; None = the
    operator's."""

    model_config = ConfigDict(extra="forbid")

    tokens_per_day: int | None = Field(default=None, ge=0)
    tokens_per_month: int | None = Field(default=None, ge=0)
    cost_per_day: float | None = Field(default=None, ge=0)
    cost_per_month: float | None = Field(default=None, ge=0)
    model_seconds_per_day: float | None = Field(default=None, ge=0)
    model_seconds_per_month: float | None = Field(default=None, ge=0)
    followups_per_pr: int | None = Field(default=None, ge=0)
    followups_per_day: int | None = Field(default=None, ge=0)


class RepoConfig(BaseModel):
    """The repository's settings for mini-fix, after `_extends` and the organisation's defaults are merged."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    """Whether the trigger label (and `/agent retry`) starts runs in this repository."""
    label: str | None = Field(default=None, min_length=1, max_length=50)
    """The trigger label; None = MINIFIX_LABEL."""
    model: str | None = None
    """litellm model name for this repository; None = the deployment's."""
    image: str | None = None
    """Sandbox image; None = MINIFIX_SANDBOX_IMAGE."""
    limits: Limits = Limits()
    """Step, token, wall-time, memory and CPU budgets."""
    setup: list[str] = []
    """Commands run in the sandbox, in order, before the agent starts (e.g. installing dependencies)."""
    setup_network: bool = False
    """Give the setup commands a network through the filtering proxy (only where MINIFIX_ALLOW_SETUP_NETWORK is on)."""
    allow_links: bool = False
    """Let the change add or modify symlinks, gitlinks and `.gitmodules` (refused by default)."""
    test: str | None = None
    """A command run in the sandbox after the agent; its result goes in the PR body."""
    attempts: int | None = Field(default=None, ge=1)
    """Attempts per job, each in its own sandbox with its own sampling settings; the best by the App's own
    tests is published (None = MINIFIX_AGENT_ATTEMPTS; clamped to MINIFIX_MAX_AGENT_ATTEMPTS)."""
    reproduce: str | None = None
    """Command that runs the reproduction test, filled with shell-quoted values from the host's diff: `{files}`
    its files' paths (`python3 -m pytest -q {files}`), `{packages}` and `{pattern}` their Go packages and a `-run`
    pattern of the tests it adds, `{names}` those tests (cargo), `{classes}` the Java classes; or a command without
    placeholders that runs a package or the whole suite (`npm test`): how the App checks an attempt's reproduction
    test fails before its fix and passes after. None = inferred from the runner `test` names, else from the
    repository's language (`bot/repo_config/runners.py`, `infer.py`), also when `test` is set."""
    test_paths: list[str] = PYTHON_TEST_PATHS
    """Globs naming test files: a change's new or changed files matching them are its reproduction test. Unset,
    the preset of the repository's language (`infer.TEST_PATHS`: `*_test.go`, `*.test.*`, `src/test/**`, ...)."""
    protected_paths: list[str] = []
    """Globs the agent's change may not touch, on top of `.github/workflows/**`."""
    instructions: str = ""
    """Extra guidance for the agent (the repository's AGENTS.md is included too)."""
    allowed_users: list[str] = []
    """Logins that may trigger runs (with write permission); empty with no teams = every writer."""
    allowed_teams: list[str] = []
    """Team slugs of the owner organisation whose members may trigger runs (with write permission)."""
    ci_followups: int | None = Field(default=None, ge=0)
    """Follow-ups the App makes on its PR when CI fails on its own commit, before it stops and says how to continue
    (`/agent retry` resets the count); None = 2; 0 = none; clamped to MINIFIX_MAX_CI_FOLLOWUPS."""
    training: bool = True
    """Whether this repository's runs may be exported as training data (`mini-fix export`)."""
    quotas: Quotas = Quotas()
    """The organisation's use per day, month or PR (`tokens_per_month: 2000000`, ...): lower than the operator's
    MINIFIX_QUOTA_* only; a higher value is ignored with a warning."""
    keep_partial_work: bool = True
    """When a run ends on a step, token or time limit (or the job's token budget or wall time, a token quota) with
    a change that passes the checks, open (or update) a draft PR titled `[WIP] ...` with it, so that `/agent retry`
    continues from it."""

    def allows_everyone(self) -> bool:
        """True when any writer may trigger runs."""
        return not self.allowed_users and not self.allowed_teams
