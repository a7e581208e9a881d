"""The repository's setup when neither `.github/mini-fix.yml` nor its devcontainer gives one, read from its build
files per ecosystem: Python (`setup_python.py`), JavaScript from the lockfile, Go, Rust, Maven; else a
`script/bootstrap` (or `script/setup`) of the repository's own.

Maven resolves what the test run needs (`test-compile` with compiling skipped: the dependencies of test scope
and the lifecycle's plugins) into the local repository in HOME, which the setup cache keeps. Maven ignores the
proxy variables, so the `~/.m2/settings.xml` the setup phase starts with (setup_mirrors.py) names the proxy, and
the operator's mirror where one is set.

The checkout is untrusted: only regular top-level files are read (never through a link), capped, as data. The
commands run in the setup phase, which already runs the repository's code (a `setup.py`, an npm `postinstall`)
with egress only to the registries the operator allows; so does a bootstrap script. The ecosystems' own installs
come first because they need nothing but a registry and their result is keyed by the lockfiles the setup cache
hashes; a bootstrap script often asks for a package manager or root the sandbox lacks, so it runs only when no
ecosystem gives a setup.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.repo_config.infer import read_small
from bot.repo_config.schema import RepoConfig
from bot.repo_config.setup_python import infer_python

NPM_FLAGS = "--no-audit --no-fund"
# The sandbox image keeps each toolchain offline (GOPROXY=off, CARGO_NET_OFFLINE, npm's offline mode): the setup
# phase alone, which has the proxy, tells them to go online; the operator's MINIFIX_SETUP_ENV goes over these.
ONLINE_ENV = {"GOPROXY": "https://proxy.golang.org", "CARGO_NET_OFFLINE": "false", "npm_config_offline": "false"}
# Every dependency and plugin `mvn test` needs, without compiling (a branch that does not compile still sets up).
MAVEN_RESOLVE = "mvn -B -q test-compile -Dmaven.main.skip=true -Dmaven.test.skip=true"
BOOTSTRAP_SCRIPTS = ("script/bootstrap", "script/setup")


@dataclass(frozen=True)
class SetupPlan:
    """The setup a run uses and where it came from (for the status comment, the PR and `mini-fix run`)."""

    commands: list[str] = field(default_factory=list)
    why: str = ""  # "configured in .github/mini-fix.yml" or "inferred from pyproject.toml, package-lock.json"
    inferred: bool = False

    def describe(self) -> str:
        """One line: the commands (or none) and why."""
        if not self.commands:
            return f"none ({self.why})"
        shown = "; ".join(f"`{command}`" for command in self.commands)
        return f"{shown} ({self.why})"


def infer(checkout: Path) -> SetupPlan:
    """The setup the checkout's build files call for (no commands: nothing to install)."""
    commands: list[str] = []
    sources: list[str] = []
    for detect in (_python, _javascript, _go, _rust, _maven):
        if found := detect(checkout):
            commands += found[0]
            sources += found[1]
    if not commands and (script := _bootstrap(checkout)):
        commands, sources = [f"bash {script}"], [script]
    if not commands:
        return SetupPlan([], "no dependencies to install found in the repository's build files")
    return SetupPlan(commands, f"inferred from {', '.join(sources)}", inferred=True)


def resolve(repo: RepoConfig, checkout: Path, *, enabled: bool) -> tuple[RepoConfig, SetupPlan]:
    """The config with the inferred setup (and its network) where the repository gives none, and the plan."""
    if repo.setup:
        return repo, SetupPlan(list(repo.setup), "the repository's own: `setup` or its devcontainer")
    if not enabled:
        return repo, SetupPlan([], "not inferred: MINIFIX_INFER_SETUP is off")
    plan = infer(checkout)
    if not plan.commands:
        return repo, plan
    return repo.model_copy(update={"setup": plan.commands, "setup_network": True}), plan


Found = tuple[list[str], list[str]] | None
Detector = Callable[[Path], Found]


def _python(checkout: Path) -> Found:
    found = infer_python(checkout)
    return (found.commands, found.sources) if found else None


def _javascript(checkout: Path) -> Found:
    """npm ci / yarn / pnpm by the lockfile (npm install without one) when package.json declares dependencies."""
    try:
        package = json.loads(read_small(checkout, "package.json") or "null")
    except (ValueError, RecursionError):
        return None
    if not isinstance(package, dict) or not any(package.get(k) for k in ("dependencies", "devDependencies")):
        return None
    fallback = f"npm install --no-package-lock {NPM_FLAGS}"
    by_lockfile = {
        "pnpm-lock.yaml": f"if command -v pnpm >/dev/null; then pnpm install --frozen-lockfile; else {fallback}; fi",
        "yarn.lock": f"if command -v yarn >/dev/null; then yarn install --frozen-lockfile; else {fallback}; fi",
        "package-lock.json": f"npm ci {NPM_FLAGS}",
        "npm-shrinkwrap.json": f"npm ci {NPM_FLAGS}",
    }
    for lockfile, command in by_lockfile.items():
        if _regular(checkout, lockfile):
            return [command], ["package.json", lockfile]
    return [fallback], ["package.json (no lockfile)"]


def _go(checkout: Path) -> Found:
    """`go mod download` for a module with requirements, unless they are vendored."""
    text = read_small(checkout, "go.mod")
    if text is None or "require" not in text or _directory(checkout, "vendor"):
        return None
    return ["go mod download"], ["go.mod"]


def _rust(checkout: Path) -> Found:
    text = read_small(checkout, "Cargo.toml")
    if text is None or "dependencies" not in text or _directory(checkout, "vendor"):
        return None
    return ["cargo fetch"], ["Cargo.toml"]


def _maven(checkout: Path) -> Found:
    """Maven's resolution of a pom that declares dependencies (the image's Debian repository stays first)."""
    text = read_small(checkout, "pom.xml")
    if text is None or "<dependency>" not in text:
        return None
    return [MAVEN_RESOLVE], ["pom.xml"]


def _bootstrap(checkout: Path) -> str | None:
    """The repository's own setup script (GitHub's scripts-to-rule-them-all), a regular file in a real folder."""
    if not _directory(checkout, "script"):
        return None
    return next((name for name in BOOTSTRAP_SCRIPTS if _regular(checkout, name)), None)


def _regular(checkout: Path, name: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(checkout / name).st_mode) and _directory(checkout, str(Path(name).parent))
    except OSError:
        return False


def _directory(checkout: Path, name: str) -> bool:
    """A real directory of the checkout (`.` included), not a link to one."""
    if name in ("", "."):
        return True
    try:
        return stat.S_ISDIR(os.lstat(checkout / name).st_mode)
    except OSError:
        return False
