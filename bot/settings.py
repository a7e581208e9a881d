"""Operator settings, from the environment (prefix MINIFIX_) or a `.env` file. Nothing is read at import time."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import warnings
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.forge_settings import ForgeSettings
from bot.forge_settings import SettingsError as SettingsError  # re-exported: callers import it from here

# Package registries a setup phase typically needs (PyPI, npm, Debian, crates.io, Go modules, Maven Central).
DEFAULT_SETUP_HOSTS = (
    "pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "deb.debian.org", "security.debian.org",
    "index.crates.io", "static.crates.io", "proxy.golang.org", "sum.golang.org", "repo.maven.apache.org",
    "repo1.maven.org",
)  # fmt: skip
# Never a registry mirror: "this network", loopback, link-local (cloud metadata), multicast and reserved.
NEVER_MIRRORS = ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4")
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# "attempts" meant two things: a job's claims by workers and its parallel agent attempts; the old names still work.
DEPRECATED_ENV = {
    "MINIFIX_MAX_ATTEMPTS": "MINIFIX_MAX_CLAIMS",
    "MINIFIX_ATTEMPTS": "MINIFIX_AGENT_ATTEMPTS",
    "MINIFIX_MAX_ATTEMPTS_PER_JOB": "MINIFIX_MAX_AGENT_ATTEMPTS",
}


def is_postgres_url(database_url: str | None) -> bool:
    """True for a postgresql:// (or postgres://) database URL: the one test every backend choice uses."""
    return (database_url or "").startswith(POSTGRES_SCHEMES)


# BaseSettings named again (already ForgeSettings's base): ruff knows a pydantic model only by a base it can see
# in this file (astral-sh/ruff#13630), and fields' mutable defaults are safe in one.
class Settings(ForgeSettings, BaseSettings):
    """Everything an operator configures. See README.md for the full table. The forges' settings (the GitHub App's,
    the GitLab instance's) and their checks come first, from `ForgeSettings` (bot/forge_settings.py)."""

    model_config = SettingsConfigDict(env_prefix="MINIFIX_", env_file=".env", extra="ignore")

    model: str = "hosted_vllm/mini-fix"
    """litellm model name, e.g. hosted_vllm/<served-model-name>."""
    model_api_base: str | None = None
    """OpenAI-compatible API base of the model server, e.g. http://vllm:8000/v1."""
    model_api_key: SecretStr | None = None
    """API key for the model server, if it wants one."""
    data_dir: Path = Path("./data")
    """Where the database, queue and trajectories live."""
    database_url: str | None = None
    """Ledger database; default sqlite:///<data_dir>/mini-fix.db."""
    label: str = "mini-fix"
    """The issue label that triggers a run."""
    public_url: str | None = None
    """Public base URL of this App, used for links to run pages."""
    sandbox_image: str = "mini-fix-sandbox:latest"
    """Default sandbox image; a repository's config may name another."""
    sandbox_base_image: str = "mini-fix-base:trixie"
    """Base the sandbox image is built on when it is missing and cannot be pulled (present, pulled or imported)."""
    sandbox_base_rootfs: Path | None = None
    """A root filesystem tarball imported as the base when it is not on the engine (the App's image sets it)."""
    sandbox_profile: Literal["polyglot", "slim"] = "polyglot"
    """The toolchains of a sandbox image the worker builds itself: polyglot (Python, Node.js, Go, Rust, Java) or
    slim (Python only); the same MINIFIX_SANDBOX_PROFILE scripts/ensure-docker.sh reads."""
    workers: int = Field(default_factory=lambda: max(1, (os.cpu_count() or 2) // 2))
    """Jobs one worker process runs at once (default: one per two cores)."""
    operator_token: SecretStr | None = None
    """Bearer token protecting /runs and operator pages."""
    agent_config: Path | None = None
    """Agent config YAML; default prompts/agent.yaml."""
    model_profiles: str = ""
    """Model name globs → agent profile, `glob=profile` comma-separated, first match wins (e.g.
    `hosted_vllm/qwen2.5-coder-1.5b*=text,hosted_vllm/*=toolcall`); a profile is `text`, `toolcall` or a YAML
    path; a model no glob matches runs with MINIFIX_AGENT_CONFIG (default prompts/agent.yaml)."""
    log_format: str = "auto"
    """auto (JSON unless on a terminal), json or console."""
    log_level: str = "INFO"
    """Log level."""
    lease_seconds: int = 120
    """A running job's lease; renewed while it runs, re-dispatched after it expires."""
    webhook_cache_seconds: float = 5.0
    """How long the webhook path trusts its cached ledger reads (a repository's label, an installation's state)."""
    max_claims: int = Field(
        default=3, validation_alias=AliasChoices("max_claims", "MINIFIX_MAX_CLAIMS", "MINIFIX_MAX_ATTEMPTS")
    )
    """Claims of a job before it is given up: its worker kept dying, or GitHub's rate limit outlasted each claim
    (was MINIFIX_MAX_ATTEMPTS)."""
    step_limit: int | None = None
    """Default agent step limit; None = prompts/agent.yaml's (a repository's config may set its own)."""
    token_limit: int | None = None
    """Default token budget per run; None = prompts/agent.yaml's."""
    wall_time_limit: int | None = None
    """Default seconds per run; None = prompts/agent.yaml's."""
    sandbox_memory: str = "2g"
    """Default sandbox memory limit (swap is set equal)."""
    sandbox_cpus: float = 1.0
    """Default sandbox CPU quota, in cores."""
    sandbox_disk: str = "1g"
    """Default size of the sandbox's working directory (a tmpfs volume)."""
    agent_attempts: int = Field(
        default=1, validation_alias=AliasChoices("agent_attempts", "MINIFIX_AGENT_ATTEMPTS", "MINIFIX_ATTEMPTS")
    )
    """Default agent attempts per job (a repository's `attempts:` may ask for more, up to
    MINIFIX_MAX_AGENT_ATTEMPTS; was MINIFIX_ATTEMPTS)."""
    max_agent_attempts: int = Field(
        default=5,
        validation_alias=AliasChoices(
            "max_agent_attempts", "MINIFIX_MAX_AGENT_ATTEMPTS", "MINIFIX_MAX_ATTEMPTS_PER_JOB"
        ),
    )
    """Ceiling on a repository's `attempts`; a higher value is clamped, and the status comment says so."""
    max_ci_followups: int = Field(default=5, ge=0)
    """Ceiling on a repository's `ci_followups` (CI follow-ups per PR between a person's runs; 0 turns them off)."""
    max_sandboxes: int = 0
    """Sandboxes (attempts and their verification) one worker process runs at once over all its jobs (more
    wait for one to end); 0 = MINIFIX_WORKERS × MINIFIX_AGENT_ATTEMPTS."""
    max_steps: int = 300
    """Ceiling on a repository's `limits.steps`; a higher value is clamped, and the status comment says so."""
    max_tokens: int = 5_000_000
    """Ceiling on a repository's `limits.tokens`."""
    max_wall_time: int = 4 * 3600
    """Ceiling on a repository's `limits.wall_time` (seconds)."""
    max_memory: str = "8g"
    """Ceiling on a repository's `limits.memory`."""
    max_cpus: float = 4.0
    """Ceiling on a repository's `limits.cpus`."""
    max_disk: str = "4g"
    """Ceiling on a repository's `limits.disk`."""
    allowed_images: Annotated[list[str], NoDecode] = []
    """Comma-separated image patterns a repository's `image:` may name; empty = only MINIFIX_SANDBOX_IMAGE."""
    devcontainer_images: Annotated[list[str], NoDecode] = []
    """Comma-separated image patterns a repository's `.devcontainer/devcontainer.json` `image` may name (then used
    as its sandbox image, with its `postCreateCommand` as setup); empty = devcontainers are not used."""
    allowed_models: Annotated[list[str], NoDecode] = []
    """Comma-separated model patterns a repository's `model:` may name; empty = the deployment's provider's models."""
    max_clone_bytes: int = 500 << 20
    """A repository whose clone is larger than this is refused before it is copied into the sandbox."""
    max_export_bytes: int = 1 << 30
    """The most the sandbox's working directory may hold when the change is taken out."""
    setup_timeout: int = 1800
    """Seconds a repository's `setup` commands may take together in one sandbox; past it the run ends as
    `setup_failed` ("setup took longer than N s")."""
    setup_cache_bytes: int = 8 << 30
    """Total bytes of the setup cache (`<data dir>/setup-cache`), least recently used entries dropped past it;
    0 turns the cache off."""
    setup_cache_max_bytes: int = 2 << 30
    """The largest one setup's result may be and still be cached (larger: setup runs in every sandbox)."""
    max_changed_files: int = 10_000
    """An attempt whose tree adds, deletes or resizes more files than this is refused before its diff is computed."""
    max_changed_bytes: int = 64 << 20
    """An attempt whose new and resized files hold more bytes than this is refused before its diff is computed."""
    replay_window_seconds: float = 3600.0
    """A signed body seen again within this many seconds under a new delivery id is ignored as a replay."""
    run_link_days: int = 30
    """Days a signed run link (/runs/{id}?sig=…) stays valid."""
    sandbox_runtime: str | None = None
    """OCI runtime of sandbox containers, e.g. `runsc` for gVisor (installed on the engine); None = runc."""
    allow_setup_network: bool = False
    """Let a repository's `setup_network: true` give its setup commands egress, through the filtering proxy only."""
    setup_allowed_hosts: Annotated[list[str], NoDecode] = list(DEFAULT_SETUP_HOSTS)
    """Comma-separated host names the setup proxy lets through (a leading dot allows subdomains)."""
    setup_mirror_addresses: Annotated[list[str], NoDecode] = []
    """Comma-separated IPv4 addresses or CIDR ranges of the operator's own registry mirrors (an Artifactory or
    Nexus on a private network) the setup proxy may connect to although private addresses are refused; only for
    names in MINIFIX_SETUP_ALLOWED_HOSTS, on ports 80 and 443, never loopback, link-local or the engine host."""
    setup_upstream_network: str = "bridge"
    """Engine network the setup proxy reaches those hosts through."""
    infer_setup: bool = True
    """With no `setup` in a repository's config or devcontainer, infer one from its build files (pip, npm, go,
    cargo, Maven) and run it with the setup proxy's network (MINIFIX_SETUP_ALLOWED_HOSTS only); false: no setup."""
    setup_env: dict[str, SecretStr] = {}
    """A JSON object of variables the setup phase alone gets (a registry mirror such as `PIP_INDEX_URL` or
    `npm_config_registry`, its credentials): never the agent's actions, the checks, a trajectory or a log."""
    setup_cargo_mirror: str = ""
    """A sparse cargo registry that replaces crates.io (`sparse+https://nexus.example/repository/crates/`): written
    as the sandbox's `~/.cargo/config.toml` when setup starts, kept for the offline test runs after it. The URL is
    readable by the agent, so it may carry no credentials; its host goes in MINIFIX_SETUP_ALLOWED_HOSTS."""
    setup_maven_mirror: str = ""
    """A Maven repository that mirrors every remote one (`external:*`: Maven Central and a pom's own), e.g.
    `https://nexus.example/repository/maven-public/`: written into the sandbox's `~/.m2/settings.xml` when setup
    starts. Readable by the agent, so no credentials; its host goes in MINIFIX_SETUP_ALLOWED_HOSTS."""
    setup_ca_file: Path | None = None
    """A PEM bundle the setup phase's tools trust instead of the image's (an internal registry's CA, or a
    TLS-inspecting proxy's, with the public ones): copied into the sandbox for setup and named by the tools'
    CA variables (SSL_CERT_FILE, PIP_CERT, NODE_EXTRA_CA_CERTS, CARGO_HTTP_CAINFO, ...)."""
    allow_owners: Annotated[list[str], NoDecode] = []
    """Comma-separated owners whose repositories may use the App; empty = every owner."""
    deny_owners: Annotated[list[str], NoDecode] = []
    """Comma-separated owners whose deliveries are ignored."""
    allow_repos: Annotated[list[str], NoDecode] = []
    """Comma-separated owner/name repositories that may use the App; empty = every repository."""
    deny_repos: Annotated[list[str], NoDecode] = []
    """Comma-separated owner/name repositories whose deliveries are ignored."""
    max_running_per_installation: int = 0
    """Jobs of one installation running at once across workers (0 = no cap)."""
    fair_share_weights: Annotated[dict[str, float], NoDecode] = {}
    """Comma-separated `owner=weight` shares of the job slots when runs wait (`acme=3,octo=1`); unnamed owners 1."""
    fair_share_window_seconds: float = Field(default=3600.0, gt=0)
    """How far back the runs an installation started count against its share of the slots."""
    price_per_million_prompt_tokens: float = Field(default=0.0, ge=0)
    """What a million prompt tokens cost the operator (any currency; `mini-fix usage`'s cost column, the cost
    quotas); with every price 0, litellm's price of a hosted model is used, and a self-hosted one costs 0."""
    price_per_million_completion_tokens: float = Field(default=0.0, ge=0)
    """What a million completion tokens cost the operator."""
    price_per_model_second: float = Field(default=0.0, ge=0)
    """What a second of waiting on the model costs the operator (a self-hosted model's GPU time)."""
    quota_tokens_per_day: int = Field(default=0, ge=0)
    """Model tokens one organisation's runs may use per UTC day; a run past it is refused with a comment (0 = none)."""
    quota_tokens_per_month: int = Field(default=0, ge=0)
    """Model tokens one organisation's runs may use per UTC calendar month (0 = none)."""
    quota_cost_per_day: float = Field(default=0.0, ge=0)
    """Cost (by the MINIFIX_PRICE_* settings, else litellm's) one organisation's runs may use per UTC day (0 = none)."""
    quota_cost_per_month: float = Field(default=0.0, ge=0)
    """Cost one organisation's runs may use per UTC calendar month (0 = none)."""
    quota_model_seconds_per_day: float = Field(default=0.0, ge=0)
    """Seconds of waiting on the model one organisation's runs may use per UTC day (0 = none)."""
    quota_model_seconds_per_month: float = Field(default=0.0, ge=0)
    """Seconds of waiting on the model one organisation's runs may use per UTC calendar month (0 = none)."""
    quota_followups_per_pr: int = Field(default=0, ge=0)
    """CI and review follow-ups the App may start on one issue's PR, ever (0 = none)."""
    quota_followups_per_day: int = Field(default=0, ge=0)
    """CI and review follow-ups one organisation's runs may start per UTC day (0 = none)."""
    quota_when_reached: Literal["refuse", "wait"] = "refuse"
    """A run that would start past a quota: `refuse` it (a comment says which quota and when it resets), or let
    it `wait` queued until the window resets (one comment says when it will start; a per-PR quota never resets)."""
    quota_overrides: dict[str, dict[str, float]] = {}
    """A JSON object of per-owner quotas over the defaults, e.g. `{"acme": {"tokens_per_month": 50000000}}`
    (keys `tokens_per_day`, `tokens_per_month`, `cost_per_day`, `cost_per_month`, `model_seconds_per_day`,
    `model_seconds_per_month`, `followups_per_pr`, `followups_per_day`; 0 = none for that owner); a GitLab
    top-level group is `gitlab:<group>`, never the GitHub owner of its name (bot/worker/quotas.py `quota_owner`)."""
    max_queued_per_installation: int = 0
    """Queued jobs one installation may have; the next trigger gets a queue-full comment (0 = no cap)."""
    create_labels: bool = True
    """Create the trigger label in repositories that lack it when the App is installed or gets repositories."""
    training_export: bool = True
    """Whether `mini-fix export` may write this deployment's runs out as training data."""
    deployment: str = ""
    """This deployment's name on the sandbox engine: its sweeper removes only containers labelled with it;
    empty = derived from the App id and the data dir (`deployment_name`)."""

    @field_validator(
        "allow_owners", "deny_owners", "allow_repos", "deny_repos", "setup_allowed_hosts", "allowed_images",
        "setup_mirror_addresses", "allowed_models", "devcontainer_images", mode="before",
    )  # fmt: skip
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("fair_share_weights", mode="before")
    @classmethod
    def _parse_weights(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        weights: dict[str, float] = {}
        for part in filter(None, (p.strip() for p in value.split(","))):
            owner, sep, weight = part.partition("=")
            try:
                share = float(weight)
            except ValueError:
                share = 0.0
            if not sep or not owner.strip() or not share > 0:
                raise ValueError(f"{part!r}: write owner=weight with a weight above 0, e.g. acme=2")
            weights[owner.strip().lower()] = share
        return weights

    @field_validator("setup_mirror_addresses")
    @classmethod
    def _mirror_ranges(cls, value: list[str]) -> list[str]:
        ranges = []
        for entry in value:
            try:
                network = ipaddress.IPv4Network(entry)
            except ValueError as exc:
                raise ValueError(f"MINIFIX_SETUP_MIRROR_ADDRESSES: {entry!r} is not an IPv4 address") from exc
            if any(network.overlaps(ipaddress.IPv4Network(never)) for never in NEVER_MIRRORS):
                raise ValueError(f"MINIFIX_SETUP_MIRROR_ADDRESSES: {entry} is loopback, link-local or unroutable")
            ranges.append(str(network))
        return ranges

    @field_validator("setup_cargo_mirror")
    @classmethod
    def _cargo_mirror(cls, value: str) -> str:
        if not value:
            return value
        parts = urlsplit(value.removeprefix("sparse+"))
        if not value.startswith(("sparse+http://", "sparse+https://")) or not parts.hostname:
            raise ValueError("MINIFIX_SETUP_CARGO_MIRROR must be a sparse registry URL: sparse+https://host/path/")
        if parts.username or parts.password or any(ch in value for ch in '"\\\n'):
            raise ValueError("MINIFIX_SETUP_CARGO_MIRROR may carry no credentials (the agent can read it)")
        return value if value.endswith("/") else value + "/"

    @field_validator("setup_maven_mirror")
    @classmethod
    def _maven_mirror(cls, value: str) -> str:
        parts = urlsplit(value)
        if value and (parts.scheme not in ("http", "https") or not parts.hostname):
            raise ValueError("MINIFIX_SETUP_MAVEN_MIRROR must be an http(s) URL of a Maven repository")
        if parts.username or parts.password:
            raise ValueError("MINIFIX_SETUP_MAVEN_MIRROR may carry no credentials (the agent can read it)")
        return value

    @field_validator("model_profiles")
    @classmethod
    def _profiles_exist(cls, value: str) -> str:
        from bot.agent.profiles import parse_table, profile_path  # the agent's config only, no litellm

        for _pattern, profile in parse_table(value):
            profile_path(profile)
        return value

    @model_validator(mode="after")
    def _warn_deprecated_names(self) -> Settings:
        for old, new in DEPRECATED_ENV.items():
            if old in os.environ and new not in os.environ:
                warnings.warn(f"{old} is deprecated: set {new} (same meaning)", FutureWarning, stacklevel=2)
        return self

    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'mini-fix.db'}"
        return self

    @property
    def deployment_name(self) -> str:
        """MINIFIX_DEPLOYMENT, else `app<id>-<hash of the data dir>`: two instances sharing an engine differ."""
        if self.deployment:
            return self.deployment
        where = hashlib.sha256(str(self.data_dir.resolve()).encode()).hexdigest()[:10]
        return f"app{self.app_id or 0}-{where}"

    @property
    def uses_postgres(self) -> bool:
        """Whether the ledger, queue and shared trajectories live in PostgreSQL."""
        return is_postgres_url(self.database_url)

    @cached_property
    def secrets(self) -> list[str]:
        """Every secret value we know, for redaction in logs and trajectories."""
        values = [self.webhook_secret, self.private_key, self.model_api_key, self.operator_token]
        values += [self.gitlab_token, self.gitlab_webhook_secret]
        found = [v.get_secret_value() for v in values if v is not None]
        password = _password(self.database_url)
        found += [password, self.database_url or "" if password else "", self._key_file_text()]
        for value in self.setup_env.values():  # a mirror's URL may carry its credentials
            found += [value.get_secret_value(), _password(value.get_secret_value())]
        pem = [v.replace("\\n", "\n") for v in found if "\\n" in v]  # the key as text, with escaped newlines
        lines = [line for v in found if "PRIVATE KEY" in v for line in v.splitlines() if len(line) >= 32]
        unique = dict.fromkeys(s.strip() for s in [*found, *pem, *lines])
        return [s for s in unique if len(s) >= 6]

    def _key_file_text(self) -> str:
        if self.private_key_path is None:
            return ""
        try:
            return self.private_key_path.read_text()
        except OSError:
            return ""


def _password(url: str | None) -> str:
    """The password in a database URL, so a log line that prints it alone is redacted too."""
    if not url:
        return ""
    return urlsplit(url).password or ""


def load_settings() -> Settings:
    """The settings from the environment and `.env`; a value that does not parse is a SettingsError naming the
    variable, what is wrong and what it got (never the value of a secret), not a validation traceback."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            name = "MINIFIX_" + "_".join(str(part) for part in error["loc"]).upper()
            problems.append(f"{name}: {error['msg']}")
        raise SettingsError(
            "; ".join(problems) + " (set it in the environment or .env; docs/configuration.md)"
        ) from None
