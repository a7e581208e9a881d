"""`mini-fix run --attempts 2` with no `setup:` on projects that need installed dependencies: a src-layout pytest
project needing `attrs` (runtime) and `pytest` (its `test` extra) from PyPI, and a JavaScript project whose tests
run on mocha (an npm devDependency), both written here; and real upstream releases, downloaded as published
(pinned version and sha256, cached under ${MINIFIX_CACHE_DIR:-~/.cache/mini-fix}/realrepos), made a git repository
and broken in one place:

- Python: semver 3.0.2's sdist from PyPI (its tests/, docs doctests and setup.cfg's pytest config with `--cov`, so
  pytest-cov; setuptools-scm for the build), `bump_patch` made to add 2.
- JavaScript: deep-equal 1.0.1 from registry.npmjs.org (its test/ runs on tape, a devDependency), dates compared
  with `!==`.

The App infers the setup, runs it through the setup proxy (registries only), caches it (the second run restores
it), and the project's own runner really counts tests after the fix. One attempt fixes the bug and deletes a test,
the other only fixes it: the one that keeps the tests is proposed.

Needs Docker, the setup proxy image, a sandbox image whose Python can make a venv (MINIFIX_REALREPOS_IMAGE), and
PyPI and npm reachable from the engine's bridge network (through the host's CA bundle where TLS is inspected).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import docker
import pytest

from tests.support.model_server import ScriptedModelServer, bash_reply
from tests.support.tiers import setup_failed

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
IMAGE = os.environ.get("MINIFIX_REALREPOS_IMAGE", "mini-fix-sandbox:latest")
HOST_CA = os.environ.get("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
SUBMIT = bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nFixed it.\\n'")
TIER = "real repositories (inferred setup)"
CACHE = Path(os.environ.get("MINIFIX_CACHE_DIR") or Path.home() / ".cache" / "mini-fix") / "realrepos"


@dataclass(frozen=True)
class Release:
    """A published release: its tarball, pinned by its sha256 (and npm's integrity where the registry gives one)."""

    name: str
    version: str
    url: str
    sha256: str
    root: str  # the folder the tarball unpacks to
    integrity: str = ""  # npm's `sha512-...`


@dataclass(frozen=True)
class Project:
    files: dict[str, str]
    fix: str  # the command that fixes the bug
    drop: str  # the command that deletes an existing test
    dropped: str  # that test's name
    setup: str  # a word of the inferred setup
    why: str  # where it was inferred from
    counted: str  # the runner's own count of passing tests, as a regex with one group
    release: Release | None = None  # a real project: its files come from this release, not `files`
    bug: tuple[str, str, str] = ("", "", "")  # a release's file, its text, and the text that breaks it
    failed_before: str = ""  # a release's count of failed tests before the fix, as a regex with one group
    total: int = 2  # the runner's count after the fix; 0: a release's, read as above zero
    urls: list[str] = field(default_factory=list)  # where its release and dependencies come from


PYTHON = Project(
    files={
        "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "shapes"\nversion = "0.1.0"\ndependencies = ["attrs>=22.2"]\n\n'
        '[project.optional-dependencies]\ntest = ["pytest>=7"]\n\n[tool.setuptools.packages.find]\nwhere = ["src"]\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        "src/shapes/__init__.py": "import attrs\n\n\n@attrs.frozen\nclass Rect:\n    width: int\n    height: int\n\n"
        "    def area(self) -> int:\n        return self.width + self.height\n\n"
        "    def perimeter(self) -> int:\n        return 2 * (self.width + self.height)\n",
        "tests/test_rect.py": "from shapes import Rect\n\n\ndef test_area():\n    assert Rect(2, 3).area() == 6\n\n\n"
        "def test_perimeter():\n    assert Rect(2, 3).perimeter() == 10\n",
    },
    fix="sed -i 's/self.width + self.height$/self.width * self.height/' src/shapes/__init__.py",
    drop="sed -i '/def test_perimeter/,$d' tests/test_rect.py",
    dropped="test_perimeter",
    setup="pip install -e '.[test]'",
    why="inferred from pyproject.toml",
    counted=r"(\d+) passed",
)
JAVASCRIPT = Project(
    files={
        "package.json": '{"name": "calc", "version": "1.0.0", "scripts": {"test": "mocha"},\n'
        ' "devDependencies": {"mocha": "^10.2.0"}}\n',
        "calc.js": "exports.add = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n",
        "test/calc.test.js": "const assert = require('assert');\nconst { add, mul } = require('../calc');\n\n"
        "describe('calc', () => {\n  it('adds', () => assert.strictEqual(add(2, 3), 5));\n"
        "  it('muls', () => assert.strictEqual(mul(2, 3), 6));\n});\n",
    },
    fix="sed -i 's/a - b/a + b/' calc.js",
    drop="sed -i '/muls/d' test/calc.test.js",
    dropped="muls",
    setup="npm install --no-package-lock",
    why="inferred from package.json (no lockfile)",
    counted=r"(\d+) passing",
)
SEMVER = Project(
    files={},
    release=Release(
        "semver",
        "3.0.2",
        "https://files.pythonhosted.org/packages/41/6c/a536cc008f38fd83b3c1b98ce19ead13b746b5588c9a0cb9dd9f6ea434bc/semver-3.0.2.tar.gz",
        "6253adb39c70f6e51afed2fa7152bcd414c411286088fb4b9effb133885ab4cc",
        "semver-3.0.2",
    ),
    bug=("src/semver/version.py", "self._patch + 1)", "self._patch + 2)"),
    fix="sed -i 's/self._patch + 2)/self._patch + 1)/' src/semver/version.py",
    drop="perl -0pi -e 's/def test_should_bump_patch\\(\\):.*?\\n\\n\\n//s' tests/test_bump.py",
    dropped="test_should_bump_patch",
    setup="pip install pytest pytest-cov",
    why="inferred from pyproject.toml, setup.cfg",
    counted=r"pytest: (\d+) passed",
    failed_before=r"(\d+) failed",
    total=0,
    urls=["https://pypi.org/simple/pytest-cov/"],
)
DEEP_EQUAL = Project(
    files={},
    release=Release(
        "deep-equal",
        "1.0.1",
        "https://registry.npmjs.org/deep-equal/-/deep-equal-1.0.1.tgz",
        "679226cbc8173a807e1985410f71a06092f25bea729da142d9fda15a8e085ed0",
        "package",
        "sha512-bHtC0iYvWhyaTzvV3CZgPeZQqCOBGyGsVV7v4eevpdkLHfiSrXUdBG+qAuSz4RI70sszvjQ1QSZ98An1yNwpSw==",
    ),
    bug=("index.js", "actual.getTime() === expected.getTime()", "actual.getTime() !== expected.getTime()"),
    fix="sed -i 's/getTime() !== expected/getTime() === expected/' index.js",
    drop="perl -0pi -e \"s/test\\('buffers'.*?\\n\\}\\);\\n//s\" test/cmp.js",
    dropped="buffers",
    setup="npm install --no-package-lock",
    why="inferred from package.json (no lockfile)",
    counted=r"tape: tests \d+, pass (\d+)$",
    failed_before=r"fail (\d+)",
    total=0,
    urls=["https://registry.npmjs.org/tape"],
)


@pytest.fixture(scope="module")
def ready() -> None:
    """The image, the proxy image and the registries, else the tier's setup failed (CI fails, elsewhere skips)."""
    try:
        client = docker.from_env()
        client.images.get(IMAGE)
        client.images.get("mini-fix-proxy:latest")
        venv = "python3 -m venv --system-site-packages /tmp/v && /tmp/v/bin/python -m pip --version"
        client.containers.run(IMAGE, ["bash", "-c", venv], remove=True, network_mode="none")
    except Exception as exc:  # no engine, no image, or an image whose Python cannot make a venv with pip
        setup_failed(TIER, f"{IMAGE} with a venv-capable Python and the proxy image are needed: {exc}")
    for url in ("https://pypi.org/simple/attrs/", "https://registry.npmjs.org/mocha", *SEMVER.urls, *DEEP_EQUAL.urls):
        try:
            urllib.request.urlopen(url, timeout=20).close()
        except OSError as exc:
            setup_failed(TIER, f"{url} cannot be reached from this machine: {exc}")


def _download(release: Release) -> Path:
    """The release's tarball, from the cache when its sha256 is the pinned one, else fetched and checked."""
    cached = CACHE / f"{release.name}-{release.version}.tar.gz"
    if cached.is_file() and hashlib.sha256(cached.read_bytes()).hexdigest() == release.sha256:
        return cached
    try:
        with urllib.request.urlopen(release.url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        setup_failed(TIER, f"{release.url} could not be downloaded: {exc}")
    assert hashlib.sha256(data).hexdigest() == release.sha256, f"{release.url} is not the pinned release"
    if release.integrity:
        sha512 = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        assert sha512 == release.integrity, f"{release.url} does not match npm's integrity"
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.part")
    partial.write_bytes(data)
    partial.replace(cached)
    return cached


def _unpack_release(where: Path, project: Project) -> None:
    assert project.release is not None
    with tarfile.open(_download(project.release)) as tar:
        tar.extractall(where.parent / "release", filter="data")
    (where.parent / "release" / project.release.root).rename(where)
    path, good, bad = project.bug
    text = (where / path).read_text()
    assert text.count(good) == 1, f"{path} does not hold {good!r} once"
    (where / path).write_text(text.replace(good, bad))


def _repo(where: Path, project: Project) -> Path:
    if project.release:
        _unpack_release(where, project)
    for name, text in project.files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    who = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(where), *who, *args], check=True, capture_output=True)
    return where


def _run(repo: Path, out: Path, data: Path, project: Project) -> tuple[subprocess.CompletedProcess[str], Path]:
    scripts = {
        0.0: [bash_reply(f"{project.fix} && {project.drop}"), SUBMIT],  # fixes it and deletes a test
        0.7: [bash_reply(project.fix), SUBMIT],
    }
    env = {**os.environ, "MINIFIX_DATA_DIR": str(data), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "MINIFIX_SANDBOX_IMAGE": IMAGE, "MINIFIX_SETUP_CA_FILE": HOST_CA}  # fmt: skip
    cmd = [sys.executable, "-m", "bot.cli", "run", "--repo", str(repo), "--task", "a calculation is wrong"]
    with ScriptedModelServer([], by_temperature=scripts) as model:
        cmd += ["--model", "hosted_vllm/scripted", "--api-base", model.api_base, "--output", str(out)]
        result = subprocess.run([*cmd, "--attempts", "2"], capture_output=True, text=True, env=env, timeout=1500)
    return result, out


@pytest.mark.parametrize(
    "project",
    [PYTHON, JAVASCRIPT, SEMVER, DEEP_EQUAL],
    ids=["pytest-pypi", "mocha-npm", "semver-sdist-pypi", "deep-equal-tape-npm"],
)
def test_setup_is_inferred_cached_and_the_tests_really_run(ready: None, project: Project, tmp_path: Path) -> None:
    repo, data = _repo(tmp_path / "repo", project), tmp_path / "data"
    first, out = _run(repo, tmp_path / "out1", data, project)
    report = first.stdout + first.stderr
    assert first.returncode == 0, report
    assert "setup: `" in first.stdout and project.setup in first.stdout and project.why in first.stdout, report
    assert re.search(r"^setup: ran in \d+ s", first.stdout, re.MULTILINE), report
    _chosen_kept_the_tests(out, project)
    second, out = _run(repo, tmp_path / "out2", data, project)
    report = second.stdout + second.stderr
    assert second.returncode == 0, report
    assert re.search(r"^setup: restored from cache in \d+ s", second.stdout, re.MULTILINE), report
    assert not re.search(r"^setup: ran in", second.stdout, re.MULTILINE), report
    _chosen_kept_the_tests(out, project)
    print(first.stdout, second.stdout, sep="\n")  # with -s: the setup lines and their times


def _chosen_kept_the_tests(out: Path, project: Project) -> None:
    chosen = json.loads((out / "trajectory.json").read_text())["mini_fix"]
    test = chosen["test"]
    assert chosen["attempt"] == 2 and test["passed"] is True, test
    if project.total:  # the project written here: the runner's own count, both tests ran
        count = re.search(project.counted, test["output"])
        assert count and int(count.group(1)) == project.total, test["output"]
    else:  # a release: the runner's own count, read by the host, is above zero
        count = re.search(project.counted, test["summary"], re.MULTILINE)
        assert count and int(count.group(1)) > 0, test
    assert project.dropped in (out / "attempts.md").read_text()
    if project.failed_before:  # the deleting attempt changed a test file: the tests ran before the fix and failed
        (deleting,) = out.glob("*-1/trajectory.json")
        before = json.loads(deleting.read_text())["mini_fix"]["reproduction"]["before_verdict"]
        failed = re.search(project.failed_before, before)
        assert before.startswith("failed") and failed and int(failed.group(1)) > 0, before


def test_a_setup_that_fails_is_said_plainly_and_the_run_goes_on(ready: None, tmp_path: Path) -> None:
    broken = dict(PYTHON.files)
    broken["pyproject.toml"] = broken["pyproject.toml"].replace('"attrs>=22.2"', '"attrs>=999"')  # no such release
    repo = _repo(tmp_path / "repo", Project(**{**PYTHON.__dict__, "files": broken}))
    result, out = _run(repo, tmp_path / "out", tmp_path / "data", PYTHON)
    report = result.stdout + result.stderr
    failed = re.search(r"^setup: \*\*failed\*\* after \d+ s, so the tests may not run: (.*)$", result.stdout, re.M)
    assert failed and "pip install -e '.[test]'` exited with 1" in failed.group(1), report
    assert "attempt 1: Submitted" in result.stdout and "attempt 2: Submitted" in result.stdout, report
    assert result.stdout.count("setup: **failed**") == 1, report  # said once, and not run in the checks' sandboxes
    tests = [json.loads(p.read_text())["mini_fix"].get("test") for p in out.glob("*/trajectory.json")]
    # The image's pytest runs (the venv sees the system's packages), but the project was never installed.
    assert tests and all(t and not t["passed"] and "No module named 'shapes'" in t["output"] for t in tests), tests
