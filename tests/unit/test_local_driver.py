"""`mini-fix run`'s driver (`bot/pipeline/local.py`): its configuration is the App's, settled in the App's order, and
what it refuses it refuses before any sandbox or model call."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.pipeline import local, runconfig
from bot.pipeline.runconfig import NO_FLAGS, Flags
from bot.settings import Settings
from tests.support.buggy_repos import GIT_USER, git


def _checkout(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    git(path, "add", "-A")
    git(path, *GIT_USER, "commit", "-qm", "base")
    return path


def _configured(given: local.LocalGiven, settings: Settings) -> local.Ready:
    return local.LocalRun(given, settings).configured()


def _given(checkout: Path, tmp: Path, flags: Flags = NO_FLAGS) -> local.LocalGiven:
    return local.LocalGiven(checkout, "fix it", flags, tmp / "out", "r1")


def _settings(tmp: Path, **values: object) -> Settings:
    return Settings(data_dir=tmp / "data", model="openai/m", api_base="http://h:1/v1", _env_file=None, **values)


PYPROJECT = '[project]\nname = "calc"\nversion = "0"\n[project.optional-dependencies]\ntest = ["pytest"]\n'


def test_a_python_checkout_is_settled_as_the_app_settles_a_clone(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "calc", {"pyproject.toml": PYPROJECT, "tests/test_calc.py": "def test_x(): pass\n"})
    settings = _settings(tmp_path, infer_setup=True)
    ready = _configured(_given(checkout, tmp_path), settings)
    settled = ready.settled
    assert ready.head == git(checkout, "rev-parse", "HEAD").strip()  # the commit the run works on, read once
    # the App's own step on the same configuration: one definition of what a checkout settles
    app = runconfig.settle(local.run_config(NO_FLAGS, local.repo_config(checkout), settings), checkout, settings)
    assert settled == app
    assert settled.setup.inferred and settled.config.setup_inferred and settled.config.sandbox.network
    assert settled.testing.command and settled.config.repo.test == settled.testing.command  # the judge's test
    assert settled.tested == (settled.config.repo, settled.testing)


def test_a_configured_test_and_setup_are_kept(tmp_path: Path) -> None:
    config = "test: python -m unittest -q\nsetup:\n  - pip install -e .\n"
    checkout = _checkout(tmp_path / "c", {"pyproject.toml": PYPROJECT, ".github/mini-fix.yml": config})
    settled = _configured(_given(checkout, tmp_path), _settings(tmp_path, infer_setup=True)).settled
    assert settled.config.repo.test == "python -m unittest -q"
    assert "configured" in settled.testing.why
    assert not settled.setup.inferred and not settled.config.setup_inferred


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda tmp: tmp / "missing", "is not a directory"),
        (lambda tmp: (tmp / "plain").mkdir() or tmp / "plain", "is not a git checkout"),
    ],
)
def test_a_checkout_that_cannot_be_used_is_refused(tmp_path: Path, make: Callable[[Path], Path], why: str) -> None:
    with pytest.raises(local.Refused, match=why):
        _configured(_given(make(tmp_path), tmp_path), _settings(tmp_path))
    assert not (tmp_path / "out").exists()


def test_an_unreadable_config_file_is_refused_with_its_error(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "c", {".github/mini-fix.yml": "attempts: [not, a, number]\n"})
    with pytest.raises(local.Refused, match="attempts"):
        _configured(_given(checkout, tmp_path), _settings(tmp_path))


def test_a_self_hosted_model_without_an_address_is_refused_before_anything_runs(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "c", {"README": "x\n"})
    settings = Settings(data_dir=tmp_path / "data", model="hosted_vllm/m", _env_file=None)
    with pytest.raises(local.Refused, match="--api-base"):
        _configured(_given(checkout, tmp_path), settings)
    flags = Flags(api_base="http://h:8000/v1")
    assert _configured(_given(checkout, tmp_path, flags), settings).settled.config.model.api_base == "http://h:8000/v1"
