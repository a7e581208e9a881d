"""The repository's test command when `.github/mini-fix.yml` sets none, read from its build files.

The checkout is untrusted: only regular files at its top level are read (never through a symlink), each capped
at `MAX_FILE_BYTES`, and nothing in them is run. The result names the command, why it was chosen, how to run one
test in that language (for the agent's task), the reproduce command and the language's `test_paths` preset.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from bot.repo_config import runners
from bot.repo_config.schema import PYTHON_TEST_PATHS, RepoConfig

MAX_FILE_BYTES = 256 * 1024
# npm's placeholder `scripts.test`: no tests, so none is inferred from it.
_NPM_PLACEHOLDER = re.compile(r"no test specified", re.IGNORECASE)
_PYTEST_MARKERS = {
    "pyproject.toml": "[tool.pytest",
    "setup.cfg": "[tool:pytest]",
    "tox.ini": "[pytest]",
    "pytest.ini": "[pytest]",
    ".pytest.ini": "[pytest]",
}
# tox.ini's `commands` running pytest (on the line or a continuation line), and pytest's conftest.py files: a pytest
# project even without a `[pytest]` section (unittest would run none of its plain test functions).
_TOX_PYTEST = re.compile(r"(?m)^[ \t]*commands[ \t]*=.{0,200}\bpy\.?test\b|^[ \t]+(?:python3? -m )?py\.?test\b")
_CONFTESTS = ("conftest.py", "tests/conftest.py", "test/conftest.py")

_PYTHON_TEST = re.compile(r"(?:test_\w*|\w+_test)\.py\Z")

TEST_PATHS = {
    "javascript": ["*.test.*", "*.spec.*", "test/**", "tests/**", "__tests__/**", "**/__tests__/**", "**/test/**"],
    "go": ["*_test.go"],
    "rust": ["tests/**", "**/tests/**"],
    "java": ["src/test/**", "**/src/test/**", "*Test.java", "*Tests.java"],
    "python": PYTHON_TEST_PATHS,
}


@dataclass(frozen=True)
class TestPlan:
    """How the repository's tests run, and where that came from."""

    language: str  # javascript, go, rust, java, python, or unknown
    command: str | None  # the `test` command; None: no tests found to run
    why: str  # in a reviewer's words: "configured in ..." or "inferred from go.mod"
    one_test: str  # how to run a single test, for the agent's task (no full command to copy)
    reproduce: str | None = None  # the reproduce template for one test file or test (`runners.py`)

    def template_vars(self) -> dict[str, str]:
        """What the instance template shows the agent."""
        return {
            "test_command": self.command or "",
            "test_why": self.why,
            "test_one": self.one_test,
            "language": self.language,
        }


def read_small(checkout: Path, name: str) -> str | None:
    """A top-level regular file's text (None when absent, a symlink, not a file or over the cap)."""
    try:
        fd = os.open(checkout / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def infer(checkout: Path) -> TestPlan:
    """The test plan from the checkout's build files, in the issue's order of precedence."""
    for detect in (_javascript, _go, _rust, _maven, _gradle, _python):
        if (plan := detect(checkout)) is not None:
            return plan
    return TestPlan("unknown", None, "no test command found in the repository's build files", "")


def _exists(checkout: Path, name: str) -> bool:
    return (checkout / name).is_file() and not (checkout / name).is_symlink()


def _javascript(checkout: Path) -> TestPlan | None:
    text = read_small(checkout, "package.json")
    if text is None:
        return None
    try:
        scripts = json.loads(text).get("scripts")
        script = scripts.get("test") if isinstance(scripts, dict) else None
    except (ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(script, str) or not script.strip() or _NPM_PLACEHOLDER.search(script):
        return None
    tool, lockfile = "npm", "npm: no lockfile"
    for name, candidate in (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("package-lock.json", "npm")):
        if _exists(checkout, name):
            tool, lockfile = candidate, f"{candidate} because of {name}"
            break
    runner = "node's test runner" if "node --test" in script else "the repository's test script"
    one = (
        "`node --test` and the test file's path"
        if "node --test" in script
        else "`node` and the test file's path (when the file runs on its own), else the full test command"
    )
    why = f"inferred from package.json `scripts.test` ({runner}; {lockfile})"
    command = f"{tool} test"
    # mocha, jest, vitest or node's test runner run one file; a runner of the project's own runs the whole suite
    return TestPlan("javascript", command, why, one, runners.javascript(script) or command)


def _go(checkout: Path) -> TestPlan | None:
    if not _exists(checkout, "go.mod"):
        return None
    one = "`go test` with the package's directory (such as `./` and its path) and `-run` with the test's name"
    return TestPlan("go", "go test ./...", "inferred from go.mod", one, runners.GO)


def _rust(checkout: Path) -> TestPlan | None:
    if not _exists(checkout, "Cargo.toml"):
        return None
    one = "`cargo test --offline` followed by the test function's name"
    command = "cargo test --offline"
    return TestPlan("rust", command, "inferred from Cargo.toml", one, runners.CARGO)


# Quiet Maven, but Surefire's own counts kept (-q hides them when the tests pass): the verdict reads them.
MAVEN_TEST = "mvn -o -q test -Dorg.slf4j.simpleLogger.log.org.apache.maven.plugin.surefire=info"


def _maven(checkout: Path) -> TestPlan | None:
    if not _exists(checkout, "pom.xml"):
        return None
    one = "`mvn -o -q test` with `-Dtest=` followed by the test class's name"
    return TestPlan("java", MAVEN_TEST, "inferred from pom.xml", one, runners.MAVEN)


def _gradle(checkout: Path) -> TestPlan | None:
    name = next((n for n in ("build.gradle", "build.gradle.kts") if _exists(checkout, n)), None)
    if name is None:
        return None
    one = "`gradle test --offline` with `--tests` followed by the test class's name"
    return TestPlan("java", "gradle test --offline", f"inferred from {name}", one, "gradle test --offline")


def _python(checkout: Path) -> TestPlan | None:
    for name, marker in _PYTEST_MARKERS.items():
        text = read_small(checkout, name)
        if text is not None and marker in text:
            why = f"inferred from {name} (its `{marker}` section)"
            one = "`python3 -m pytest` and the test file's path (`path::test_name` for one test)"
            return TestPlan("python", "python3 -m pytest -q", why, one, runners.PYTEST)
    tox = read_small(checkout, "tox.ini")
    conftest = next((name for name in _CONFTESTS if _exists(checkout, name)), None)
    if (tox is not None and _TOX_PYTEST.search(tox)) or conftest:
        why = f"inferred from {conftest or 'tox.ini (its commands run pytest)'}"
        one = "`python3 -m pytest` and the test file's path (`path::test_name` for one test)"
        return TestPlan("python", "python3 -m pytest -q", why, one, runners.PYTEST)
    if not any(_PYTHON_TEST.match(p.name) for p in _top_and_one_below(checkout)):
        return None
    why = "inferred: Python test files and no build file naming a runner, so the standard library's unittest"
    one = "`python3 -m unittest` and the test file's path"
    return TestPlan("python", "python3 -m unittest discover -t . -s .", why, one, runners.UNITTEST)


def _top_and_one_below(checkout: Path, limit: int = 2000) -> list[Path]:
    """Up to `limit` entries at the top level and one directory below (bounded work on a huge tree)."""
    found: list[Path] = []
    try:
        for entry in os.scandir(checkout):
            found.append(Path(entry.path))
            if entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                found += [Path(e.path) for _, e in zip(range(limit), os.scandir(entry.path), strict=False)]
            if len(found) >= limit:
                break
    except OSError:
        pass
    return found


def resolve(repo: RepoConfig, checkout: Path) -> tuple[RepoConfig, TestPlan]:
    """The config with `test`, `reproduce` and `test_paths` inferred where the repository set none, and the plan.

    A configured `test` never turns the reproduction check off: without `reproduce`, the template comes from the
    configured command's runner when it names one (`go test ./...`, `npx jest`), else from the language."""
    inferred = infer(checkout)
    if repo.test:
        plan = TestPlan(inferred.language, repo.test, "configured in .github/mini-fix.yml (`test`)", inferred.one_test)
        update: dict[str, object] = {}
        if repo.reproduce is None and (reproduce := runners.from_command(repo.test) or inferred.reproduce):
            update["reproduce"] = reproduce
        if "test_paths" not in repo.model_fields_set and inferred.language in TEST_PATHS:
            update["test_paths"] = TEST_PATHS[inferred.language]
        return (repo.model_copy(update=update) if update else repo), plan
    if inferred.command is None:
        return repo, inferred
    update = {"test": inferred.command}
    if repo.reproduce is None and inferred.reproduce is not None:
        update["reproduce"] = inferred.reproduce
    if "test_paths" not in repo.model_fields_set:
        update["test_paths"] = TEST_PATHS[inferred.language]
    return repo.model_copy(update=update), inferred
