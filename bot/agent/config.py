"""The agent's configuration: one pydantic model per YAML section, loaded from mini-swe-agent-style files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import structlog
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parents[2] / "prompts" / "agent.yaml"
"""Our default config, `prompts/agent.yaml` at the repository root."""

ACTION_REGEX = r"```mswea_bash_command\s*\n(.*?)\n```"
TEXT_FENCE = "```mswea_bash_command"

log = structlog.get_logger(__name__)


class AgentConfigError(ValueError):
    """An agent config (a `-c` spec, MINIFIX_AGENT_CONFIG, a profile) that cannot be used; the message names the
    file, the key, what is wrong and what to do, for one line on stderr and exit 2 (never a traceback)."""


# A `-c` spec list that leaves these out replaced prompts/agent.yaml with a file that is only a part of a config.
PARTIAL_HINT = (
    "a `-c` file replaces prompts/agent.yaml (mini-swe-agent's rule): put `-c prompts/agent.yaml` first and this "
    "file after it, or pass single keys such as `-c prompts/agent.yaml -c agent.step_limit=15`"
)


class AgentConfig(BaseModel):
    """The `agent:` section: prompts and budgets."""

    model_config = ConfigDict(extra="forbid")

    system_template: str
    """Jinja2 template of the system message."""
    instance_template: str
    """Jinja2 template of the first user message; `{{task}}` is the issue."""
    timeout_template: str | None = None
    """mini-swe-agent 1.x: observation of a timed-out action (`action.action`, `output`); None = usual."""
    step_limit: int = 50
    """Model calls allowed, format errors included (0 = no limit)."""
    cost_limit: float = 0.0
    """Dollars allowed, when litellm knows a price (0 = no limit)."""
    wall_time_limit_seconds: int = 1800
    """Seconds the run may take (0 = no limit)."""
    token_limit: int = 2_000_000
    """Prompt plus completion tokens allowed over all calls (0 = no limit)."""
    max_consecutive_format_errors: int = 3
    """Replies in a row without exactly one action that end the run (0 = no limit)."""
    repeated_failure_limit: int = 0
    """Runs in a row of one command, each with the same output and exit code, after which it is refused, not run
    again (0 = off, as upstream). Another command, or another output, in between starts the count again."""
    repeated_failure_template: str = (
        "This command was not run: it just ran {{repeats}} times in a row with the same output. "
        "Try a different approach."
    )
    """Jinja2 template of the message sent instead of running a refused command (`command`, `repeats`,
    `returncode`; `failures` is `repeats`, for configs written for the earlier guard)."""
    first_action_only: bool = False
    """A reply with several actions runs its first, kept up to that block's end (default regex; off, as upstream)."""
    attempt_temperatures: list[float] = [0.0, 0.7, 1.0]
    """Sampling temperature of attempt 1, 2, 3, ... of one job (cycled when there are more attempts); attempt 1
    alone keeps `model.model_kwargs`' own temperature when the job has a single attempt."""


class ModelConfig(BaseModel):
    """The `model:` section: which model, how to call it, and how its replies and our observations read."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model_class: str = ""
    """mini-swe-agent's model class: `litellm` (tool calls) or `litellm_textbased` (fenced text). A file without
    it gets one when loaded: text when written for the text format, else tool calls (upstream's default class)."""
    model_name: str = ""
    """litellm model name, e.g. `hosted_vllm/<served-model>`; empty = the deployment's MINIFIX_MODEL."""
    api_base: str | None = None
    """Base URL of the OpenAI-compatible server, e.g. `http://vllm:8000/v1`; None = MINIFIX_MODEL_API_BASE."""
    model_kwargs: dict[str, Any] = {}
    """Extra arguments for `litellm.completion` (temperature, max_tokens, drop_params, ...)."""
    observation_template: str = (
        "{% if output.exception_info %}<exception>{{output.exception_info}}</exception>\n{% endif %}"
        "<returncode>{{output.returncode}}</returncode>\n<output>\n{{output.output}}</output>"
    )
    """Jinja2 template of the message reporting an action's result (`output.output`, `.returncode`, ...)."""
    format_error_template: str = "{{ error }}"
    """Jinja2 template of the message sent when a reply holds zero or several actions (`error`, `actions`)."""
    action_regex: str = ACTION_REGEX
    """Regex (DOTALL) whose single match in a reply is the bash command to run."""
    max_attempts: int = 6
    """Tries per model call on transient failures (connection, 429, 5xx); a per-call timeout is never retried."""
    retry_wait_seconds: float = 2.0
    """First wait between tries; it doubles each time, up to a minute. A server's `Retry-After` wins, within the
    run's wall time."""

    @property
    def tool_calls(self) -> bool:
        """Actions come as `bash` tool calls (upstream's `LitellmModel`), not as fenced text."""
        return bool(self.model_class) and "textbased" not in self.model_class.lower()


NO_DEFAULT_ENDPOINT = ("hosted_vllm/",)
"""litellm providers with no endpoint of their own: without an api base every call fails, after every retry."""


def missing_api_base(model: ModelConfig) -> str | None:
    """Why the model cannot be reached at all (its provider needs an api base and none is set), or None."""
    if model.api_base or not model.model_name.startswith(NO_DEFAULT_ENDPOINT):
        return None
    return (
        f"model {model.model_name} has no default endpoint and no api base is set "
        "(MINIFIX_MODEL_API_BASE or model.api_base)"
    )


class EnvironmentConfig(BaseModel):
    """The `environment:` section: how actions run in the sandbox."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = None
    """Sandbox image; None = the deployment's MINIFIX_SANDBOX_IMAGE."""
    cwd: str = "/testbed"
    """Working directory of every action; the repository is copied here."""
    env: dict[str, str] = {}
    """Environment of every action. Visible to the model: never put secrets here."""
    timeout: int = 120
    """Seconds one action may run before it is killed."""


class MiniFixAgentConfig(BaseModel):
    """A whole agent config file."""

    model_config = ConfigDict(extra="forbid")

    agent: AgentConfig
    """Prompts and budgets."""
    model: ModelConfig = ModelConfig()
    """The model and its templates."""
    environment: EnvironmentConfig = EnvironmentConfig()
    """The sandbox."""
    warnings: list[str] = Field(default_factory=list, exclude=True)
    """Keys the loader ignored, and why (shown to operators, never fatal)."""
    profile: str = Field(default="", exclude=True)
    """The profile this config is (a shipped name such as `text` or `toolcall`, else the files it came from)."""


SECTIONS: dict[str, type[BaseModel]] = {
    "agent": AgentConfig,
    "model": ModelConfig,
    "environment": EnvironmentConfig,
}

# mini-swe-agent 1.x kept these under `agent:`; 2.x moved them to `model:`.
LEGACY_AGENT_KEYS = {
    "action_observation_template": "observation_template",
    "format_error_template": "format_error_template",
    "action_regex": "action_regex",
}

# mini-swe-agent keys that mean something there but not here (interactive modes, host docker flags, ...).
IGNORED_KEYS = {
    "agent": {"mode", "whitelist_actions", "confirm_exit", "output_path", "agent_class"},
    "model": {
        "litellm_model_registry",
        "set_cache_control",
        "cost_tracking",
        "multimodal_regex",
    },
    "environment": {
        "environment_class",
        "forward_env",
        "run_args",
        "container_timeout",
        "interpreter",
        "executable",
        "pull_timeout",
    },
    "": {"run"},
}


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` laid over `base`, merging nested dicts; neither input is changed."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def normalise(raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Move legacy keys to their 2.x place and drop keys we don't use, saying why for each."""
    warnings: list[str] = []
    result: dict[str, Any] = {}
    for key, value in raw.items():
        if key in SECTIONS and isinstance(value, dict):
            result[key] = dict(value)
        elif key in IGNORED_KEYS[""]:
            warnings.append(f"{key}: {_why_ignored('', key)}")
        else:
            warnings.append(f"{key}: unknown section, ignored")
    _move_legacy_keys(result, warnings)
    _infer_model_class(result)
    for name, model in SECTIONS.items():
        section = result.get(name, {})
        for key in list(section):
            if key in model.model_fields:
                continue
            section.pop(key)
            warnings.append(f"{name}.{key}: {_why_ignored(name, key)}")
    return result, warnings


def _why_ignored(section: str, key: str) -> str:
    if key in IGNORED_KEYS[section]:
        return "mini-swe-agent setting, ignored by mini-fix"
    return "unknown key, ignored"


def _infer_model_class(config: dict[str, Any]) -> None:
    """Without a `model.model_class`: text when the config is written for fenced actions, else upstream's default."""
    model = config.setdefault("model", {})
    if model.get("model_class"):
        return
    templates = [v for section in config.values() if isinstance(section, dict) for v in section.values()]
    text = "action_regex" in model or any(isinstance(t, str) and TEXT_FENCE in t for t in templates)
    model["model_class"] = "litellm_textbased" if text else "litellm"


def _move_legacy_keys(config: dict[str, Any], warnings: list[str]) -> None:
    agent, model = config.get("agent", {}), config.setdefault("model", {})
    for old, new in LEGACY_AGENT_KEYS.items():
        if old not in agent:
            continue
        value = agent.pop(old)
        if new in model:
            warnings.append(f"agent.{old}: ignored, model.{new} is set")
        else:
            model[new] = value


def load_config(path: Path | None = None, overrides: dict[str, Any] | None = None) -> MiniFixAgentConfig:
    """Load a config file (default: prompts/agent.yaml), lay `overrides` over it, report ignored keys."""
    path = path or DEFAULT_CONFIG_PATH
    config = config_from_dict(deep_merge(read_yaml(path), overrides or {}), source=str(path))
    return config.model_copy(update={"profile": shown_name(path)})


def load_specs(specs: list[str]) -> MiniFixAgentConfig:
    """mini-swe-agent 2.x's `-c`: each spec a YAML file or a `key.path=value` pair, merged in order."""
    merged: dict[str, Any] = {}
    for spec in specs:
        merged = deep_merge(merged, spec_to_dict(spec))
    files = [shown_name(Path(spec)) for spec in specs if "=" not in spec]
    config = config_from_dict(merged, source=" ".join(specs), hint=PARTIAL_HINT)
    return config.model_copy(update={"profile": "+".join(files) or "custom"})


def shown_name(path: Path) -> str:
    """How a config file is named in comments and trajectories: `text` for ours, else the file's stem."""
    return "text" if path.resolve() == DEFAULT_CONFIG_PATH.resolve() else path.stem


def spec_to_dict(spec: str) -> dict[str, Any]:
    """One `-c` spec as a dict: `a.b=value` (the value read as JSON when it parses) or a YAML file's content."""
    if "=" not in spec:
        return read_yaml(Path(spec))
    key, text = spec.split("=", 1)
    keys = key.split(".")
    if any(not k for k in keys):
        raise AgentConfigError(f"-c {spec}: an empty key in `key.path=value`; write e.g. `agent.step_limit=15`")
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    for name in reversed(keys):
        value = {name: value}
    return dict(value)


def read_yaml(path: Path) -> dict[str, Any]:
    """A config file's top-level mapping (an empty file is an empty config)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise AgentConfigError(f"{path}: cannot read the agent config ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise AgentConfigError(f"{path}: the agent config is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise AgentConfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(raw, dict):
        raise AgentConfigError(f"{path}: an agent config must be a YAML mapping (sections agent:, model:, ...)")
    return raw


def config_from_dict(raw: dict[str, Any], *, source: str, hint: str = "") -> MiniFixAgentConfig:
    """Validate a merged config, logging each key it ignores; an invalid one is an AgentConfigError."""
    cleaned, warnings = normalise(raw)
    for warning in warnings:
        log.warning("agent_config_key_ignored", path=source, detail=warning)
    try:
        return MiniFixAgentConfig.model_validate({**cleaned, "warnings": warnings})
    except ValidationError as exc:
        raise AgentConfigError(_describe(exc, source, hint)) from None


def _describe(exc: ValidationError, source: str, hint: str) -> str:
    """Each problem as `file: key: what is wrong`, then what to do."""
    problems = []
    missing = False
    for error in exc.errors(include_url=False):
        key = ".".join(str(part) for part in error["loc"]) or "(top level)"
        missing = missing or error["type"] == "missing"
        problems.append(f"{key}: {'missing (required)' if error['type'] == 'missing' else error['msg']}")
    todo = hint if missing and hint else "fix these keys (docs/configuration.md lists every agent key)"
    return f"agent config {source}: {'; '.join(problems)}. What to do: {todo}"
