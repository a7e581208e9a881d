"""The setup cache in real Docker sandboxes: the second sandbox of a repository restores what the first one's
setup left (working directory and HOME) instead of running setup, and the agent's change comes out the same; only
setup on the trusted default branch's head stores an entry, and setup never reaches the agent's change."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import docker
import pytest

from bot import metrics
from bot.pipeline.attempts.execute import run_setup, take_change
from bot.pipeline.attempts.setup_cache import RepoSetup, SetupOptions
from bot.pipeline.attempts.setup_key import setup_key
from bot.pipeline.attempts.setup_store import SetupStore
from bot.pipeline.git import gitops
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


def _trusted(setup: RepoSetup, checkout: Path) -> RepoSetup:
    """A fix's setup: its checkout is the default branch's head."""
    setup.trust(checkout, gitops.head(checkout))
    return setup


def _branch(default: Path, dest: Path, files: dict[str, str], gone: tuple[str, ...] = ()) -> Path:
    """The PR branch mini-fix/issue-N: the default branch plus an agent-written commit."""
    subprocess.run(["git", "clone", "-q", str(default), str(dest)], check=True)
    for name, text in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text)
    for name in gone:
        (dest / name).unlink()
    who = ["-c", "user.name=mini-fix[bot]", "-c", "user.email=bot@example.com"]
    subprocess.run(["git", "-C", str(dest), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(dest), *who, "commit", "-qm", "agent-written"], check=True)
    return dest


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
    setup = _trusted(RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store)), checkout)
    factory = _factory(docker_client)
    hits, stores = _count("hit"), _count("store")

    first = _prepare(setup, factory, checkout, tmp_path, "first")
    second = _prepare(setup, factory, checkout, tmp_path, "second")

    assert _count("store") == stores + 1 and _count("hit") == hits + 1
    assert first == second  # same stamps (setup did not run again), same excludes, same change
    assert "rewritten by setup" not in first[0] and "left-pad/stamp" in first[0]  # tracked: laid back as committed
    assert first[1] == "/.cache-dir/\n/generated.txt\n"  # setup's untracked output stays out of the change, both times
    assert first[2] == ["app.py"]  # what setup rewrote in a tracked file never reaches the change, both times
    assert setup.summary().startswith("ran in ") and ", restored from cache in " in setup.summary()

    other = RepoSetup("octo/other", SetupOptions(timeout=120, store=store))  # never another repository's entry
    assert _prepare(other, factory, checkout, tmp_path, "other")[0] != first[0]
    assert not docker_client.containers.list(all=True, filters={"label": "mini-fix.test=setup-cache"})


def test_a_corrupt_entry_is_dropped_and_setup_runs(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    checkout = _checkout(tmp_path)
    store = SetupStore(tmp_path / "cache", max_total=1 << 30)
    setup = _trusted(RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store)), checkout)
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
    assert entry.read_bytes()[:17] != b"not a tar archive"  # replaced (never dropped first) by this trusted setup


def test_a_result_over_the_cap_is_not_cached(tmp_path: Path, docker_client: docker.DockerClient) -> None:
    checkout = _checkout(tmp_path)
    store = SetupStore(tmp_path / "cache", max_total=1 << 30)
    setup = RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store, max_entry_bytes=4096))
    sandbox = _trusted(setup, checkout).bind(_factory(docker_client))(small_config(), "cache-cap")
    try:
        sandbox.copy_in(checkout)
        run_setup(sandbox, SETUP, networked=False, checkout=checkout)
    finally:
        sandbox.close()
    assert not list((tmp_path / "cache").glob("*/*"))  # nothing left, not even a partial file


MAKEFILE = "setup:\n\tmkdir -p node_modules && echo ok > node_modules/ok\n"
# What an agent-written commit can make `make setup` do on the PR branch (the key names neither file).
BACKDOOR = (
    "setup:\n\tmkdir -p node_modules && echo ok > node_modules/ok\n"
    "\tmkdir -p $$(python3 -m site --user-site)\n"
    "\techo 'print(\"BACKDOOR\")' > $$(python3 -m site --user-site)/usercustomize.py\n"
    "\tsed -i 's/return a - b/return a + b  # BACKDOOR/' calc.py\n"
)
PROBE = "python3 -c pass; cat calc.py"


def _job(setup: RepoSetup, factory, checkout: Path, tmp: Path, name: str) -> tuple[str, list[str], str]:  # type: ignore[no-untyped-def]
    """One sandbox of a job (as verify prepares it): what Python prints and calc.py says, and the agent's change."""
    with prepared(
        setup.bind(factory), small_config(), f"cache-{name}", checkout, RepoConfig(setup=["make setup"])
    ) as ready:
        probe = ready.sandbox.execute(PROBE).output
        ready.sandbox.execute("echo '# note' >> README.md")
        change = take_change(ready.sandbox, checkout, tmp / f"export-{name}", max_bytes=1 << 30, exclude=ready.excludes)
    return probe, change.paths, change.diff


def test_a_follow_ups_setup_never_reaches_another_jobs_sandbox(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    default = tmp_path / "default"
    default.mkdir()
    for name, text in {
        "calc.py": "def add(a, b):\n    return a - b\n",
        "README.md": "calc\n",
        "requirements.txt": "six\n",
        "Makefile": MAKEFILE,
        ".gitignore": "node_modules/\n",
    }.items():
        (default / name).write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(default), *args], check=True)
    branch = _branch(default, tmp_path / "branch", {"Makefile": BACKDOOR})
    image = docker_client.images.get(small_config().image).id
    assert setup_key(["make setup"], image, False, branch) == setup_key(["make setup"], image, False, default)
    store = SetupStore(tmp_path / "cache", max_total=1 << 30)
    factory = _factory(docker_client)

    # A CI follow-up on mini-fix/issue-7: its setup runs the agent-written Makefile, in its own sandboxes only.
    followup = RepoSetup("octo/widgets#1", SetupOptions(timeout=120, store=store))
    probe, paths, diff = _job(followup, factory, branch, tmp_path, "followup")
    assert "BACKDOOR" in probe.splitlines()[0]  # it did run there (HOME)...
    assert not list(store.root.glob("*/*.tar"))  # ...it stored nothing...
    assert "return a - b" in probe and paths == ["README.md"] and "BACKDOOR" not in diff  # ...and its diff is clean

    # A fix for another issue, on the default branch: nothing of the follow-up's setup, in HOME or in its diff.
    fix = _trusted(RepoSetup("octo/widgets#1", SetupOptions(timeout=120, store=store)), default)
    hits = _count("hit")
    probe, paths, diff = _job(fix, factory, default, tmp_path, "fix")
    assert "BACKDOOR" not in probe and "return a - b" in probe and paths == ["README.md"] and "BACKDOOR" not in diff
    assert _count("hit") == hits and len(list(store.root.glob("*/*.tar"))) == 1  # setup ran, and stored

    # The next follow-up restores the default branch's entry (its setup does not run): still nothing stored by it.
    (entry,) = store.root.glob("*/*.tar")
    stored = entry.read_bytes()
    probe, paths, _ = _job(RepoSetup("octo/widgets#1", SetupOptions(timeout=120, store=store)), factory, branch,
                           tmp_path, "followup-2")  # fmt: skip
    assert _count("hit") == hits + 1 and "BACKDOOR" not in probe and paths == ["README.md"]
    assert entry.read_bytes() == stored


def test_a_failed_restore_on_a_branch_tree_keeps_the_good_entry(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    checkout = _checkout(tmp_path)
    store = SetupStore(tmp_path / "cache", max_total=1 << 30)
    factory = _factory(docker_client)
    _prepare(_trusted(RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store)), checkout), factory,
             checkout, tmp_path, "fix")  # fmt: skip
    (entry,) = store.root.glob("*/*.tar")
    good = entry.read_bytes()
    # An agent-written commit tracks a directory where the entry has a link: the sandbox's `tar -x` fails there.
    branch = _branch(checkout, tmp_path / "branch", {"node_modules/link/keep.txt": "x\n"}, gone=(".gitignore",))
    image = docker_client.images.get(small_config().image).id
    assert setup_key(SETUP, image, False, branch) == setup_key(SETUP, image, False, checkout)
    misses = _count("miss")

    _, _, paths, _ = _prepare(RepoSetup("octo/widgets", SetupOptions(timeout=120, store=store)), factory, branch,
                              tmp_path, "followup")  # fmt: skip

    assert _count("miss") == misses + 1 and "app.py" in paths  # restore failed, undone, setup ran
    assert entry.read_bytes() == good and entry.with_suffix(".sha256").exists()  # neither dropped nor replaced


def test_setup_that_rewrites_hides_or_replaces_tracked_files_leaves_the_change_clean(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    checkout = _checkout(tmp_path)
    (checkout / "lib").mkdir()
    (checkout / "lib" / "util.py").write_text("X = 1\n")
    subprocess.run(["git", "-C", str(checkout), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lib"],
                   check=True)  # fmt: skip
    setup = [
        "echo 'return a + b  # BACKDOOR' >> app.py && git update-index --skip-worktree app.py",  # hidden from git
        "rm -rf lib && ln -s /tmp lib",  # a tracked directory replaced by a link
        "chmod +x config.txt && rm requirements.txt && git config core.fileMode false",
    ]
    sandbox = RepoSetup("o/r", SetupOptions(timeout=120)).bind(_factory(docker_client))(small_config(), "cache-reset")
    try:
        sandbox.copy_in(checkout)
        excludes = run_setup(sandbox, setup, networked=False, checkout=checkout)
        sandbox.execute("echo '# the agent' >> config.txt")
        change = take_change(sandbox, checkout, tmp_path / "export", max_bytes=1 << 30, exclude=excludes)
    finally:
        sandbox.close()
    assert change.paths == ["config.txt"] and "BACKDOOR" not in change.diff and "new mode" not in change.diff
