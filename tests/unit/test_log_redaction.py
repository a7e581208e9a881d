"""Log lines leave the worker redacted: known secrets, and credential shapes no list holds (a job's token)."""

from __future__ import annotations

import io
import json

import pytest
import structlog

from bot.logs import configure_logging

KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + "A" * 40 + "\n-----END RSA PRIVATE KEY-----"
MINTED = "ghs_" + "Zq9" * 12  # an installation token minted for one job: in no secrets list


@pytest.fixture
def lines():
    configure_logging("INFO", "json", secrets=["webhook-secret-value"])
    out = io.StringIO()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=out))  # the App's processors, kept
    yield lambda: [json.loads(line) for line in out.getvalue().splitlines()]
    structlog.reset_defaults()


def test_known_secret_and_token_shapes_are_redacted_everywhere_in_the_line(lines) -> None:
    log = structlog.get_logger("t")
    log.info(
        "git failed",
        error=f"remote said: x-access-token:{MINTED}@github.com refused; secret webhook-secret-value",
        headers={"Authorization": f"token {MINTED}"},
        argv=["git", "clone", f"https://x-access-token:{MINTED}@github.com/o/r"],
        key=KEY,
        count=3,
    )
    (line,) = lines()
    text = json.dumps(line)
    assert MINTED not in text and "webhook-secret-value" not in text and "MIIEow" not in text
    assert line["headers"] == {"Authorization": "token ***"}
    assert line["argv"][:2] == ["git", "clone"] and line["count"] == 3


def test_a_line_without_credentials_is_unchanged(lines) -> None:
    structlog.get_logger("t").info("job_done", repo="octo/app", outcome="pr_opened", sha="a" * 40)
    (line,) = lines()
    assert (line["event"], line["repo"], line["outcome"], line["sha"]) == (
        "job_done",
        "octo/app",
        "pr_opened",
        "a" * 40,
    )


def test_gitlab_token_shapes_are_redacted(lines) -> None:
    pat, other = "glpat-" + "Ab3_" * 6, "s3cr3t-project-token-value"  # a PAT, and a token of no known shape
    structlog.get_logger("t").info(
        "git failed",
        error=f"fatal: unable to access 'https://oauth2:{other}@gitlab.example.org/g/p.git/': 403; {pat}",
    )
    (line,) = lines()
    assert pat not in line["error"] and other not in line["error"]
    assert "https://oauth2:***@gitlab.example.org/g/p.git/" in line["error"]
