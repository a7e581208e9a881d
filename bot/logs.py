"""structlog setup: JSON lines in production, readable console on a terminal; context bound per delivery/job."""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog


def _redactor(secrets: list[str]) -> Any:
    def redact(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        for key, value in event.items():
            if isinstance(value, str):
                for secret in secrets:
                    value = value.replace(secret, "***")
                event[key] = value
        return event

    return redact


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
