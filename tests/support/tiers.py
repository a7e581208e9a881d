"""How a test tier whose setup fails behaves: under CI it fails, elsewhere it skips with the reason."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """CI sets CI=true; there no tier may skip."""
    return os.environ.get("CI", "").lower() == "true"


def setup_failed(tier: str, reason: str) -> NoReturn:
    """Fail the tier in CI, skip it (saying why) on a developer's machine."""
    if in_ci():
        pytest.fail(f"{tier} setup failed: {reason}", pytrace=False)
    pytest.skip(f"{tier} setup failed (not CI, so skipped): {reason}")


def honour_realmodel_opt_out() -> None:
    """MINIFIX_SKIP_REALMODEL=1 skips the real-model tier on a developer's machine; CI refuses it."""
    if os.environ.get("MINIFIX_SKIP_REALMODEL") != "1":
        return
    if in_ci():
        pytest.fail(
            "MINIFIX_SKIP_REALMODEL=1 is not honoured under CI=true: the real-model tier must run", pytrace=False
        )
    pytest.skip("MINIFIX_SKIP_REALMODEL=1: real-model tests skipped on purpose")
