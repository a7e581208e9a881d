"""structlog setup: JSON lines in production, readable console on a terminal; context bound per delivery/job."""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog

from bot.redaction import REDACTED, scrub_text


def _redactor(secrets: list[str]) -> Any:
    def clean(value: str) -> str:
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return scrub_text(value)[0]  # a token minted for one job is in no list: its shape gives it away

    def redact(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        for key, value in event.items():
            if isinstance(value, str):
                event[key] = clean(value)
            elif isinstance(value, (dict, list, tuple)):
                event[key] = clean_nested(value, clean)
        return event

    return redact


def clean_nested(value: Any, clean: Any) -> Any:
    """Strings inside (nested) dicts, lists and tuples cleaned; other values as they are."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {k: clean_nested(v, clean) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_nested(v, clean) for v in value]
    return value


def _dumps(event: dict[str, Any], **kw: Any) -> str:
    # orjson renders a log line in a fraction of json.dumps' time; `default` is structlog's fallback (repr).
    return orjson.dumps(event, default=kw.get("default"), option=orjson.OPT_NON_STR_KEYS).decode()


def configure_logging(level: str = "INFO", fmt: str = "auto", secrets: list[str] | None = None) -> None:
    """Configure structlog and stdlib logging once per process (called by the CLI, never at import)."""
    json_output = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        _redactor(secrets or []),
    ]
    renderer = structlog.processors.JSONRenderer(_dumps) if json_output else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("LiteLLM", "litellm", "httpx", "httpcore", "docker", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
