"""Fresh sandboxes for testing a tree the agent never touched, and named tests' verdicts from exit codes.

Shared by the pipeline (verifying attempts) and eval (grading, mining): nothing here trusts what a sandbox prints.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bot.pipeline.attempts.execute import TEST_TIMEOUT, run_setup
from bot.pipeline.errors import RunFailed, SetupFailed
from bot.repo_config.schema import RepoConfig
from sandbox.base import Sandbox, SandboxConfig, SandboxError

SandboxFactory = Callable[[SandboxConfig, str], Sandbox]


def test_command(template: str, ids: list[str]) -> str:
    """`template` with `{tests}` replaced by the shell-quoted ids."""
    return template.replace("{tests}", " ".join(shlex.quote(i) for i in ids))


def run_tests(sandbox: Sandbox, template: str, ids: list[str], timeout: float = TEST_TIMEOUT) -> dict[str, bool]:
    """Each id's verdict: one run of them all; when that fails, each half again until the failures are named.

    A few failures among many tests cost about (failures x log2(tests)) runs instead of one run per test.
    """
    if not ids:
        return {}
    if _passes(sandbox, test_command(template, ids), timeout):
        return dict.fromkeys(ids, True)
    if len(ids) == 1:
        return {ids[0]: False}
    half = len(ids) // 2
    return run_tests(sandbox, template, ids[:half], timeout) | run_tests(sandbox, template, ids[half:], timeout)


def _passes(sandbox: Sandbox, command: str, timeout: float) -> bool:
    """A verdict from the engine's own exit code (run_check), never from what the sandbox prints."""
    result = sandbox.run_check(command, timeout=timeout)
    return result.returncode == 0 and not result.exception_info


@dataclass
class Prepared:
    """A sandbox ready for the agent or the tests, and what its setup left untracked (kept out of the change)."""

    sandbox: Sandbox
    excludes: str


def prepare(
    factory: SandboxFactory,
    config: SandboxConfig,
    run_id: str,
    checkout: Path,
    repo: RepoConfig,
    *,
    tolerant: bool = False,
) -> Prepared:
    """A fresh sandbox holding `checkout`, the repository's setup run (with the network `config` gives it; an
    inferred one `tolerant`: `execute.run_setup`); the caller removes it. SetupFailed (the sandbox already removed)
    when it cannot be made."""
    try:
        sandbox = factory(config, run_id)
    except SandboxError as exc:
        raise SetupFailed(f"sandbox: {exc}") from exc
    try:
        try:
            sandbox.copy_in(checkout)
            excludes = run_setup(sandbox, repo.setup, networked=config.network, checkout=checkout, tolerant=tolerant)
        except (SandboxError, RunFailed) as exc:
            raise SetupFailed(f"setup: {exc}") from exc
    except BaseException:
        sandbox.close()
        raise
    return Prepared(sandbox, excludes)


@contextmanager
def prepared(
    factory: SandboxFactory, config: SandboxConfig, run_id: str, checkout: Path, repo: RepoConfig
) -> Iterator[Prepared]:
    """`prepare`, the sandbox removed when the block ends."""
    ready = prepare(factory, config, run_id, checkout, repo)
    try:
        yield ready
    finally:
        ready.sandbox.close()
