"""The change is what the worker's own git sees in the tree it took out of the real sandbox, whatever the agent
did to the sandbox's git: prefixes, renames, symlinks, gitlinks and non-UTF-8 files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from bot.github.gateway import BotIdentity
from bot.pipeline.attempts.execute import run_test, take_change
from bot.pipeline.change import Change, compute_change
from bot.pipeline.errors import RunFailed
from bot.pipeline.git import diffpaths, gitops
from sandbox.docker import DockerSandbox
from tests.integration.conftest import container_exists
from tests.security.repos import checkout, git

pytestmark = pytest.mark.docker
FILES = {
    "app.py": "print('hi')\n",
    ".github/workflows/ci.yml": "on: push\n",
    "CODEOWNERS": "* @acme/core\n",
    "secret/token.txt": "nothing\n",
}
PROTECT = ["CODEOWNERS", "secret/**"]


def _run(start: Callable[..., DockerSandbox], tmp_path: Path, commands: list[str]) -> tuple[Path, Change]:
    repo = checkout(tmp_path, FILES)
    sandbox = start()
    sandbox.copy_in(repo)
    for command in commands:
        result = sandbox.execute(command)
        assert result.returncode == 0, result.output
    return repo, take_change(sandbox, repo, tmp_path / "export", max_bytes=64 << 20)


@pytest.mark.parametrize(
    "poison",
    [
        "git config diff.mnemonicPrefix true",
        "git config diff.noprefix true",
        "git config diff.srcPrefix x/y/ && git config diff.dstPrefix x/y/",
        "git config diff.external /bin/true && git config core.pager cat",
    ],
)
def test_the_sandboxs_git_config_cannot_hide_protected_paths(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path, poison: str
) -> None:
    edits = "echo 'on: [push, pull_request]' > .github/workflows/ci.yml && echo '* @evil' > CODEOWNERS"
    _, change = _run(start_sandbox, tmp_path, [poison, edits, "echo leak > secret/token.txt", "echo x >> app.py"])
    assert sorted(change.paths) == [".github/workflows/ci.yml", "CODEOWNERS", "app.py", "secret/token.txt"]
    assert diffpaths.protected(change.paths, PROTECT) == [".github/workflows/ci.yml", "CODEOWNERS", "secret/token.txt"]
    assert "diff --git a/CODEOWNERS b/CODEOWNERS" in change.diff


def test_both_sides_of_a_rename_are_checked(start_sandbox: Callable[..., DockerSandbox], tmp_path: Path) -> None:
    _, change = _run(start_sandbox, tmp_path, ["git mv .github/workflows/ci.yml ci.yml"])
    assert sorted(change.paths) == [".github/workflows/ci.yml", "ci.yml"]
    assert diffpaths.protected(change.paths) == [".github/workflows/ci.yml"]


def test_a_symlink_replacing_the_workflows_directory_is_flagged(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    _, change = _run(start_sandbox, tmp_path, ["rm -r .github/workflows && ln -s ../evil .github/workflows"])
    assert ".github/workflows" in change.paths and ".github/workflows (symlink)" in change.links
    assert ".github/workflows" in diffpaths.protected(change.paths)


def test_secret_glob_matches_a_file_replacing_the_directory(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    _, change = _run(start_sandbox, tmp_path, ["rm -r secret && echo x > secret"])
    assert diffpaths.protected(change.paths, PROTECT) == ["secret", "secret/token.txt"]


def test_symlinks_gitlinks_and_submodules_are_reported(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    commands = [
        "ln -s /etc/passwd passwd.txt",
        "mkdir vendored && cd vendored && git init -q && git -c user.email=a@b commit -qm x --allow-empty",
        "printf '[submodule \"v\"]\\n\\tpath = v\\n\\turl = https://example.invalid/v\\n' > .gitmodules",
    ]
    _, change = _run(start_sandbox, tmp_path, commands)
    assert "passwd.txt (symlink)" in change.links and ".gitmodules (submodule)" in change.links
    assert "vendored/.git (nested repository)" in change.links


def test_a_change_to_a_latin1_file_is_diffed_and_applied_as_bytes(
    start_sandbox: Callable[..., DockerSandbox], tmp_path: Path
) -> None:
    repo = checkout(tmp_path / "seed", {"notes.txt": "caf\xe9\n".encode("latin-1")})
    sandbox = start_sandbox()
    sandbox.copy_in(repo)
    sandbox.execute("printf 'na\\xefve\\n' >> notes.txt")
    change = take_change(sandbox, repo, tmp_path / "export", max_bytes=64 << 20)
    assert change.paths == ["notes.txt"]
    gitops.apply_diff(repo, change.diff)
    assert (repo / "notes.txt").read_bytes() == "caf\xe9\nna\xefve\n".encode("latin-1")
    assert git(repo, "diff", "--cached", "--name-only").split() == ["notes.txt"]


def test_the_export_cap_stops_a_tree_too_large_to_take_out(
    start_sandbox: Callable[..., DockerSandbox], docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    repo = checkout(tmp_path, {"a.txt": "a\n"})
    sandbox = start_sandbox()
    sandbox.copy_in(repo)
    sandbox.execute("head -c 3000000 /dev/zero > big.bin")
    with pytest.raises(RunFailed) as failed:
        take_change(sandbox, repo, tmp_path / "export", max_bytes=1 << 20)
    assert "export limit" in failed.value.detail
    sandbox.close()  # the half-read archive stream no longer holds the container: removing it succeeds
    assert not container_exists(docker_client, sandbox.container_id)


def test_push_change_carries_no_hook_or_filter_from_the_change(tmp_path: Path) -> None:
    """A `.gitattributes` in the change names a filter nobody defines, and even a hook in the clone never runs."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo = checkout(tmp_path / "w", {"a.txt": "a\n"})
    git(repo, "remote", "add", "origin", str(remote))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("b\n")
    (tree / ".gitattributes").write_text("* filter=pwn diff=pwn\n")
    marker = tmp_path / "ran"
    hooks = repo / ".git" / "hooks"
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "pre-commit").chmod(0o755)
    change = compute_change(repo, tree)
    assert sorted(change.paths) == [".gitattributes", "a.txt"]
    gitops.apply_diff(repo, change.diff)
    gitops.commit(repo, BotIdentity(name="mini-fix[bot]", email="1+mini-fix[bot]@users.noreply.github.com"), "x")
    assert not marker.exists()
    assert git(repo, "show", "HEAD:a.txt") == "b\n"


def test_the_test_verdict_is_the_engines_exit_code(start_sandbox: Callable[..., DockerSandbox], tmp_path: Path) -> None:
    """A daemon the agent left cannot answer for the check: it is gone, and the code is the engine's exec's."""
    repo = checkout(tmp_path, {"a.txt": "a\n"})
    sandbox = start_sandbox()
    sandbox.copy_in(repo)
    sandbox.execute("setsid -f sh -c 'while :; do echo 0 > /tmp/verdict; sleep 0.1; done' >/dev/null 2>&1")
    failed = run_test(sandbox, "sleep 0.5; test ! -e /tmp/verdict || pgrep -f verdict; exit 3")
    assert failed["returncode"] == 3 and failed["passed"] is False
    assert run_test(sandbox, "true")["passed"] is True
