"""The setup scripts' own logic: pip runs only when pyproject.toml changed; credentials are checked before images."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.preflight import main as preflight
from bot.preflight import problems
from bot.settings import Settings
from tests.support.fake_github import throwaway_key

ROOT = Path(__file__).resolve().parents[2]
FAKE_PIP = '#!/bin/sh\necho "pip $*" >>"$(dirname "$0")/../calls"\necho "Collecting something"\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of setup.sh and pyproject.toml over a .venv whose pip only records its calls."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copytree(ROOT / "scripts" / "lib", tmp_path / "scripts" / "lib")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in {"pip": FAKE_PIP, "python": "#!/bin/sh\necho Python 3.11.2\n", "mini-fix": "#!/bin/sh\n"}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return tmp_path


def _setup(project: Path, *args: str) -> str:
    result = subprocess.run(
        ["bash", "scripts/setup.sh", *args], cwd=project, capture_output=True, text=True, check=True
    )
    return result.stdout + result.stderr  # progress and timings go to stderr


def _pip_calls(project: Path) -> list[str]:
    calls = project / ".venv" / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_setup_runs_pip_only_when_pyproject_or_the_extras_change(project: Path) -> None:
    first = _setup(project)
    assert "installing mini-fix[postgres]" in first and "done in" in first
    installs = [c for c in _pip_calls(project) if "-e" in c.split()]
    assert installs == ["pip --disable-pip-version-check --no-input install --no-warn-script-location -e .[postgres]"]
    assert "pyproject.toml unchanged" in _setup(project)
    assert len(_pip_calls(project)) == 2  # pip upgrade + install, nothing more on the second run
    with (project / "pyproject.toml").open("a") as out:
        out.write("\n# a change\n")
    _setup(project)
    assert len(_pip_calls(project)) == 4
    _setup(project, "--dev")  # other extras: installed again, with the postgres extra kept
    assert _pip_calls(project)[-1].endswith("-e .[postgres,dev]")


def test_preflight_names_each_missing_credential_and_passes_a_complete_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = problems(Settings(_env_file=None))
    assert len(missing) == 3 and "MINIFIX_APP_ID" in missing[0] and "MINIFIX_GITLAB_URL" in missing[0]
    assert "MINIFIX_WEBHOOK_SECRET" in missing[1] and "MINIFIX_MODEL_API_BASE" in missing[2]
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("MINIFIX_")]:
        monkeypatch.delenv(name)
    assert preflight() == 2 and "mini-fix setup" in capsys.readouterr().err
    complete = Settings(
        app_id=1,
        webhook_secret=SecretStr("a-real-secret-value-1234"),
        private_key=SecretStr(throwaway_key()),
        model_api_base="http://localhost:8000/v1",
        _env_file=None,
    )
    assert problems(complete) == []


def test_run_app_checks_credentials_before_the_engine_and_images() -> None:
    lines = (ROOT / "scripts" / "run-app.sh").read_text().splitlines()
    assert lines.index(".venv/bin/python -m bot.preflight") < lines.index("scripts/ensure-docker.sh")


def _with_progress(tmp_path: Path, fake_sleep: str, command: str) -> tuple[str, list[str]]:
    """scripts/lib/progress.sh's with_progress on COMMAND, with `sleep` a shell function (FAKE_SLEEP's body) that
    may record its argument to $SLEEPS and move bash's SECONDS on; its stderr and the recorded sleeps."""
    sleeps = tmp_path / "sleeps"
    script = f'set -euo pipefail; source "$1"; sleep() {{ {fake_sleep}; }}; with_progress t step "$2" "" -- {command}'
    result = subprocess.run(
        ["bash", "-c", script, "_", str(ROOT / "scripts" / "lib" / "progress.sh"), str(tmp_path / "log")],
        env={**os.environ, "SLEEPS": str(sleeps), "DONE": str(tmp_path / "done")},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stderr, sleeps.read_text().split() if sleeps.exists() else []


def test_a_short_step_is_not_held_for_a_whole_poll(tmp_path: Path) -> None:
    # A step of 0.3 s: still running at the first look (`sleep` in `sh -c` is the real one, not the function).
    err, sleeps = _with_progress(tmp_path, 'echo "$1" >>"$SLEEPS"; command sleep "$1"', "sh -c 'sleep 0.3'")
    assert "t: step: done in" in err
    assert sleeps and float(sleeps[0]) < 1  # the first look comes early; later ones back off to a second


def test_a_long_step_reports_every_15_s_even_when_its_polls_skip_the_multiple(tmp_path: Path) -> None:
    # Each poll moves bash's clock on 4 s: the polls land at 4, 8, 12, 16, ... s, never on 15 or 30 exactly.
    fake = 'SECONDS=$((SECONDS + 4)); n=$((${n:-0} + 1)); [ "$n" -lt 9 ] || : >"$DONE"; command sleep 0.01'
    err, _ = _with_progress(tmp_path, fake, "sh -c 'until [ -e \"$DONE\" ]; do sleep 0.01; done'")
    reports = [int(m) for m in re.findall(r"^t: step: (\d+)s$", err, flags=re.MULTILINE)]
    assert len(reports) >= 2 and 15 <= reports[0] < 20 and 30 <= reports[1] < 35, err
    assert "t: step: done in" in err
