"""`mini-fix run --attempts N`: held to the operator's ceiling as the App holds a repository's `attempts:`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bot.cli.local_run import LocalRunRequest, attempt_count
from bot.settings import Settings

CEILING = "is above this deployment's ceiling (MINIFIX_MAX_ATTEMPTS_PER_JOB); used 3"


def test_attempts_above_the_ceiling_are_clamped_with_a_note(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, max_attempts_per_job=3, _env_file=None)
    request = LocalRunRequest(repo=tmp_path, task="fix it", attempts=9)
    assert attempt_count(request, settings) == (3, f"`--attempts 9` {CEILING}")
    assert attempt_count(replace(request, attempts=3), settings) == (3, "")
    assert attempt_count(replace(request, attempts=0), settings) == (1, "")  # 0: the deployment's default, 1
    from_env = settings.model_copy(update={"attempts": 4})
    assert attempt_count(replace(request, attempts=None), from_env) == (3, f"`MINIFIX_ATTEMPTS=4` {CEILING}")
