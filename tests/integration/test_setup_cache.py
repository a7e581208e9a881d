"""The setup cache in real Docker sandboxes: the second sandbox of a repository restores what the first one's
setup left (working directory and HOME) instead of running setup, and the agent's change comes out the same."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import docker
import pytest

from bot import metrics
from bot.pipeline.attempts.execute import run_setup, take_change
from bot.pipeline.attempts.setup_cache import RepoSetup, SetupOptions
from bot.pipeline.attempts.setup_store import SetupStore
from bot.pipeline.judge.testbed import prepared
from bot.repo_config.schema import RepoConfig
from sandbox.base import Sandbox, SandboxConfig
from sandbox.docker import DockerSandbox
from tests.integration.conftest import small_config

pytestmark = pytest.mark.docker
# Each run of setup leaves a different stamp (nanoseconds), so a restored tree is told apart from a fresh setup.
SETUP = [
    "mkdir -p node_modules/left-pad .cache-dir && date +%s%N > node_modules/left-pad/stamp && sleep 1",
    "date +%s%N > generated.txt && mkdir -p $HOME/.cache/tool && date +%s%N > $HOME/.cache/tool/stamp",
    "echo 'rewritten by setup' >> config.txt && ln -sf left-pad/stamp node_modules/link",
]
STAMPS = "cat node_modules/left-pad/stamp generated.txt $HOME/.cache/tool/stamp config.txt; readlink node_modules/link"


def _checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("print('hi')\n")
    (repo / "config.txt").write_text("tracked\n")
    (repo / "requirements.txt").write_text("left-pad==1.0\n")
    (repo / ".gitignore").write_text("node_modules/\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def _factory(client: docker.DockerClient):  # type: ignore[no-untyped-def]
    def start(config: SandboxConfig, run_id: str) -> Sandbox:
        return DockerSandbox.start(config, run_id, client=client, labels={"mini-fix.test": "setup-cache"})

    return start


def _count(result: str) -> float:
    return metrics.REGISTRY.get_sample_value("minifix_setup_cache_total", {"result": result}) or 0.0


def _prepare(setup: RepoSetup, factory, checkout: Path, tmp: Path, name: str) -> tuple[str, str, list[str], str]:  # type: ignore[no-untyped-def]
    """One prepared sandbox: its stamps, its excludes, and the change after the same edit."""
    repo = RepoConfig(setup=SETUP)
    with prepared(setup.bind(factory), small_config(), f"cache-{name}", checkout, repo) as ready:
        stamps = ready.sandbox.execute(STAMPS).output
        ready.sandbox.execute("echo \"print('fixed')\" > app.py")
        change = take_change(ready.sandbox, checkout, tmp / f"export-{name}", max_bytes=1 << 30, exclude=ready.excludes)
    return stamps, ready.excludes, change.paths, change.diff


def test_the_next_sandbox_restores_setup_instead_of_running_it(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    checkout = _checkout(tmp_path)
    store = SetupStore(tmp_path / "cache", max_total=1 << 30)
    setup = RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store))
    factory = _factory(docker_client)
    hits, stores = _count("hit"), _count("store")

    first = _prepare(setup, factory, checkout, tmp_path, "first")
    second = _prepare(setup, factory, checkout, tmp_path, "second")

    assert _count("store") == stores + 1 and _count("hit") == hits + 1
    assert first == second  # same stamps (setup did not run again), same excludes, same change
    assert "rewritten by setup" in first[0] and "left-pad/stamp" in first[0]
    assert first[1] == "/.cache-dir/\n/generated.txt\n"  # setup's untracked output stays out of the change, both times
    assert first[2] == ["app.py", "config.txt"]  # what setup rewrote in a tracked file shows, both times
    assert setup.summary().startswith("ran in ") and ", restored from cache in " in setup.summary()

    other = RepoSetup("octo/other", SetupOptions(timeout=120, store=store))  # never another repository's entry
    assert _prepare(other, factory, checkout, tmp_path, "other")[0] != first[0]
    assert not docker_client.containers.list(all=True, filters={"label": "mini-fix.test=setup-cache"})


def test_a_corrupt_entry_is_dropped_and_setup_runs(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    checkout = _checkout(tmp_path)
    store = SetupStore(tmp_path / "cache", max_total=1 << 30)
    setup = RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store))
    factory = _factory(docker_client)
    first = _prepare(setup, factory, checkout, tmp_path, "first")
    (entry,) = (tmp_path / "cache").glob("*/*.tar")
    data = entry.read_bytes()
    entry.write_bytes(data[:600] + b"X" * 100 + data[700:])  # no longer matches its checksum

    again = _prepare(setup, factory, checkout, tmp_path, "again")

    assert again[0] != first[0] and again[1:] == first[1:]  # setup ran again, to the same excludes and change
    assert entry.read_bytes() != data  # dropped, then stored again by the setup that ran
    entry.write_bytes(b"not a tar archive" * 1000)  # matches its checksum but the sandbox's tar refuses it
    entry.with_suffix(".sha256").write_text(hashlib.sha256(entry.read_bytes()).hexdigest())

    third = _prepare(setup, factory, checkout, tmp_path, "third")

    assert third[0] not in (first[0], again[0]) and third[1:] == first[1:]  # undone, then setup ran
    assert entry.read_bytes()[:17] != b"not a tar archive"


def test_a_result_over_the_cap_is_not_cached(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    checkout = _checkout(tmp_path)
    store = SetupStore(tmp_path / "cache", max_total=1 << 30)
    setup = RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store, max_entry_bytes=4096))
    sandbox = setup.bind(_factory(docker_client))(small_config(), "cache-cap")
    try:
        sandbox.copy_in(checkout)
        run_setup(sandbox, SETUP, networked=False)
    finally:
        sandbox.close()
    assert not list((tmp_path / "cache").glob("*/*"))  # nothing left, not even a partial file
