"""The setup cache's key (which files count, order, what changes it), its store (LRU bound, corrupt entries) and
the setup time limit, without Docker (tests/integration/test_setup_cache.py has the real sandbox)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from bot.pipeline.attempts import setup_key as setup_key_module
from bot.pipeline.attempts.execute import run_setup, take_change
from bot.pipeline.attempts.setup_cache import Lookup, RepoSetup, SetupOptions, cache_owner, setup_of
from bot.pipeline.attempts.setup_key import TreeTooLarge, dependency_files, named_files, setup_key
from bot.pipeline.attempts.setup_store import CorruptEntry, SetupStore, repo_slug
from bot.pipeline.errors import RunFailed
from bot.pipeline.git import gitops
from bot.render import render
from bot.settings import Settings
from sandbox.base import SandboxConfig, SandboxError
from tests.support.fake_sandbox import FakeSandbox

KEY_A, KEY_B, KEY_C, KEY_D = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_dependency_files_at_the_top_and_below_but_not_in_installed_trees(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "package-lock.json": "{}", "requirements-dev.txt": "x", "build.gradle.kts": "", "README.md": "",
        "packages/app/yarn.lock": "", "services/api/go.sum": "", "a/b/c/d/Cargo.lock": "",
        "node_modules/dep/package.json": "{}", ".git/pyproject.toml": "", "src/main.py": "",
    })  # fmt: skip
    assert dependency_files(tmp_path) == [
        "build.gradle.kts",
        "package-lock.json",
        "packages/app/yarn.lock",
        "requirements-dev.txt",
        "services/api/go.sum",
    ]  # a/b/c/d is past the depth bound; node_modules and .git are never walked


def test_the_key_is_order_independent_and_changes_with_each_input(tmp_path: Path) -> None:
    files = {"go.mod": "module x\n", "go.sum": "h1:abc\n", "sub/requirements.txt": "six\n"}
    one = _tree(tmp_path / "one", files)
    two = _tree(tmp_path / "two", dict(reversed(files.items())))
    (two / "unrelated.py").write_text("print(1)\n")  # a file setup does not depend on changes nothing
    key = setup_key(["go mod download"], "sha256:img", False, one)
    assert setup_key(["go mod download"], "sha256:img", False, two) == key
    assert setup_key(["go mod download"], "sha256:other", False, one) != key
    assert setup_key(["go mod download"], "sha256:img", True, one) != key
    assert setup_key(["go mod download", "true"], "sha256:img", False, one) != key
    (two / "sub/requirements.txt").write_text("six==1.16\n")
    assert setup_key(["go mod download"], "sha256:img", False, two) != key


def test_a_linked_lockfile_is_hashed_as_a_link_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("worker's own file\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(outside, repo / "poetry.lock")
    key = setup_key(["poetry install"], "img", False, repo)
    outside.write_text("changed\n")
    assert setup_key(["poetry install"], "img", False, repo) == key


def _put(store: SetupStore, repo: str, key: str, data: bytes) -> int:
    assert store.claim(repo, key)
    return store.write(repo, key, lambda out: out.write(data))


def test_the_store_keeps_its_total_dropping_the_least_recently_used(tmp_path: Path) -> None:
    store = SetupStore(tmp_path, max_total=3000)
    for key in (KEY_A, KEY_B, KEY_C):
        _put(store, "o/r", key, b"x" * 1000)
    for age, key in enumerate((KEY_A, KEY_B, KEY_C)):  # A oldest, C newest
        os.utime(store.path("o/r", key), (time.time() - 100 + age, time.time() - 100 + age))
    handle = store.open("o/r", KEY_A)  # used now: B is the least recently used
    assert handle is not None and handle.read() == b"x" * 1000
    handle.close()

    _put(store, "o/other", KEY_D, b"y" * 1000)

    assert store.open("o/r", KEY_B) is None
    assert all(store.open(repo, key) for repo, key in (("o/r", KEY_A), ("o/r", KEY_C), ("o/other", KEY_D)))
    _put(store, "o/r", KEY_B, b"z" * 5000)  # alone over the bound: not kept
    assert store.open("o/r", KEY_B) is None


def test_a_corrupt_or_unreadable_entry_is_refused(tmp_path: Path) -> None:
    store = SetupStore(tmp_path, max_total=1 << 20)
    _put(store, "o/r", KEY_A, b"tar bytes")
    store.path("o/r", KEY_A).write_bytes(b"tar bytez")
    with pytest.raises(CorruptEntry, match="checksum"):
        store.open("o/r", KEY_A)
    store.path("o/r", KEY_A).with_suffix(".sha256").unlink()
    with pytest.raises(CorruptEntry, match="cannot read"):
        store.open("o/r", KEY_A)
    store.drop("o/r", KEY_A)
    assert store.open("o/r", KEY_A) is None and not list(tmp_path.glob("*/*"))


def test_an_entry_is_written_once_whole_or_not_at_all(tmp_path: Path) -> None:
    store = SetupStore(tmp_path, max_total=1 << 20)
    assert store.claim("o/r", KEY_A) and not store.claim("o/r", KEY_A)  # another sandbox is writing it

    def fails(out: object) -> int:
        raise OSError("sandbox went away")

    with pytest.raises(OSError):
        store.write("o/r", KEY_A, fails)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no partial file
    assert store.claim("o/r", KEY_A)  # free to be written again
    with pytest.raises(ValueError):
        store.path("o/r", "../../etc")


def test_repositories_have_their_own_directories() -> None:
    assert repo_slug("Octo/Widgets") == repo_slug("octo/widgets")  # GitHub's names ignore case
    assert repo_slug("a/b-c") != repo_slug("a-b/c")
    assert "/" not in repo_slug("/tmp/../etc") and repo_slug("/tmp/../etc").startswith("tmp+..+etc-")


def test_setup_past_its_time_limit_ends_the_run_saying_so() -> None:
    setup = RepoSetup("o/r", SetupOptions(timeout=1))
    sandbox = setup.bind(lambda _config, _run_id: FakeSandbox())(SandboxConfig(), "run")
    with pytest.raises(RunFailed) as failed:
        run_setup(sandbox, ["true", "sleep 5"], networked=False, checkout=Path(sandbox.workdir))
    assert failed.value.outcome == "setup_failed"
    assert "setup took longer than 1 s (MINIFIX_SETUP_TIMEOUT)" in failed.value.detail


def test_a_sandbox_that_cannot_stream_runs_setup_and_says_how_long(tmp_path: Path) -> None:
    said: list[str] = []
    store = SetupStore(tmp_path / "cache", max_total=1 << 20)
    setup = RepoSetup("o/r", SetupOptions(timeout=60, store=store), on_report=said.append)
    sandbox = setup.bind(lambda _config, _run_id: FakeSandbox())(SandboxConfig(), "run")
    (tmp_path / "repo").mkdir()
    sandbox.copy_in(tmp_path / "repo")
    assert setup_of(sandbox) == (setup, tmp_path / "repo")
    run_setup(sandbox, ["true"], networked=False, checkout=tmp_path / "repo")
    run_setup(sandbox, ["true"], networked=False, checkout=tmp_path / "repo")
    assert said == ["ran in 0 s", "ran in 0 s (2 sandboxes)"]
    assert not (tmp_path / "cache").exists()  # the fake cannot stream: nothing cached, setup ran both times


def test_the_settings_give_the_cache_its_place_and_bounds(tmp_path: Path) -> None:
    options = SetupOptions.from_settings(Settings(_env_file=None, data_dir=tmp_path, setup_cache_bytes=5 << 30))
    assert options.store is not None and options.store.root == tmp_path / "setup-cache"
    assert (options.timeout, options.store.max_total, options.max_entry_bytes) == (1800, 5 << 30, 2 << 30)
    assert SetupOptions.from_settings(Settings(_env_file=None, data_dir=tmp_path, setup_cache_bytes=0)).store is None


def test_the_pr_body_and_status_comment_say_how_setup_went() -> None:
    run = {"run_id": "r1", "model": "m", "requester": "alice", "retry": False, "exit_status": "Submitted"}
    stats = {"exit_status": "Submitted", "steps": 1, "prompt_tokens": 1, "completion_tokens": 1, "elapsed": 1}
    common: dict[str, Any] = {"issue": {"number": 9, "title": "T"}, "stats": stats, "diffstat": [], "summary": "",
                              "checks": [], "links": {"run": None}, "draft_fallback": False}  # fmt: skip
    said = {**run, "setup": "restored from cache in 2 s"}
    assert "The repository's setup: restored from cache in 2 s.\n\n" in render("pr_body.md", **common, run=said)
    assert render("pr_body.md", **common, run=run).count("setup") == 0
    status = render("status_comment.md", phase="starting", run=said, attempts=1, progress=[], links={})
    assert "> :package: setup: restored from cache in 2 s\n" in status


def test_a_partial_write_a_dead_worker_left_is_removed_once_stale(tmp_path: Path) -> None:
    store = SetupStore(tmp_path, max_total=1 << 20)
    (tmp_path / "o-r").mkdir()
    stale, fresh = tmp_path / "o-r" / f".{KEY_A}.tar.dead.part", tmp_path / "o-r" / f".{KEY_B}.tar.live.part"
    stale.write_bytes(b"x" * 100)
    fresh.write_bytes(b"y" * 100)  # another worker may be writing it now
    os.utime(stale, (time.time() - 3 * 3600, time.time() - 3 * 3600))
    _put(store, "o/r", KEY_C, b"entry")  # every write sweeps
    assert not stale.exists() and fresh.exists()


class _Streaming(FakeSandbox):
    """A fake that streams: records the cap it was given, and writes what a tar would."""

    def __init__(self) -> None:
        super().__init__()
        self.caps: list[int] = []

    def image_id(self) -> str:
        return "sha256:" + "e" * 64

    def stream_out(self, command: str, out: Any, *, max_bytes: int, timeout: float) -> int:
        self.caps.append(max_bytes)
        out.write(b"tar")
        return 3

    def stream_in(self, command: str, src: Any, *, timeout: float) -> None:
        raise AssertionError("not restored in this test")


def test_an_entry_is_capped_by_the_total_bound_while_it_is_written(tmp_path: Path) -> None:
    store = SetupStore(tmp_path, max_total=1000)  # smaller than the per-entry cap
    setup = RepoSetup("o/r", SetupOptions(timeout=60, store=store, max_entry_bytes=2 << 30))
    sandbox = _Streaming()
    setup.ran(sandbox, Lookup(restored=False, key=KEY_A), 1.0, "/testbed")
    assert sandbox.caps == [1000] and store.open("o/r", KEY_A) is not None


def test_a_name_taken_again_by_another_repository_finds_none_of_the_old_entries(tmp_path: Path) -> None:
    store = SetupStore(tmp_path, max_total=1 << 20)
    _put(store, cache_owner("octo/widgets", 101), KEY_A, b"private packages")
    assert store.open(cache_owner("octo/widgets", 202), KEY_A) is None  # same name, another repository
    entry = store.open(cache_owner("Octo/Widgets", 101), KEY_A)  # the same repository (names ignore case)
    assert entry is not None
    entry.close()


def test_files_a_setup_command_names_count_however_deep(tmp_path: Path) -> None:
    repo = _tree(tmp_path, {"requirements/dev.txt": "six\n", "a/b/c/d/e/env.yml": "x\n", "Gemfile": "gem 'rake'\n"})
    setup = ["pip install -r requirements/dev.txt", "conda env update --file=a/b/c/d/e/env.yml -r ../../etc/passwd"]
    assert named_files(setup, repo) == ["a/b/c/d/e/env.yml", "requirements/dev.txt"]  # nothing outside the checkout
    key = setup_key(setup, "img", False, repo)
    (repo / "requirements/dev.txt").write_text("six==1.16\n")
    assert setup_key(setup, "img", False, repo) != key
    key = setup_key(setup, "img", False, repo)
    (repo / "Gemfile").write_text("gem 'rake', '13.0'\n")  # a manifest by name, whether or not a command names it
    assert setup_key(setup, "img", False, repo) != key


def test_a_tree_too_large_to_walk_gets_no_key_and_setup_runs_uncached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same walk past a smaller bound: 201 files to make rather than 20,001.
    monkeypatch.setattr(setup_key_module, "MAX_ENTRIES", 200)
    repo = tmp_path / "repo"
    (repo / "many").mkdir(parents=True)
    for n in range(200 + 1):
        (repo / "many" / f"f{n}").touch()
    with pytest.raises(TreeTooLarge):
        setup_key(["npm ci"], "img", False, repo)
    setup = RepoSetup("o/r", SetupOptions(timeout=60, store=SetupStore(tmp_path / "cache", max_total=1 << 20)))
    assert setup.lookup(_Streaming(), ["npm ci"], False, repo) == Lookup(False)  # no key: skipped, setup runs


def test_a_named_file_behind_a_linked_directory_is_never_read(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "host", {"secret.txt": "worker's own file\n"})
    repo = _tree(tmp_path / "repo", {"requirements.txt": "six\n"})
    os.symlink(outside, repo / "vendored")
    assert named_files(["pip install -r vendored/secret.txt"], repo) == []


def _repo(root: Path, files: dict[str, str]) -> Path:
    """A committed checkout, as the worker's clone is."""
    _tree(root, files)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    return root


class _Restoring(FakeSandbox):
    """A streaming fake whose restore fails (as a tree the App did not make can make `tar -x` fail), and whose
    save checks that the old entry is still whole while the new one is written."""

    def __init__(self, store: SetupStore, home: Path) -> None:
        super().__init__(env={"HOME": str(home)})
        self.store, self.saved_over = store, b""

    def image_id(self) -> str:
        return "sha256:" + "e" * 64

    def stream_in(self, command: str, src: Any, *, timeout: float) -> None:
        src.read(3)
        raise SandboxError("tar: node_modules/link: Cannot create symlink: Directory not empty")

    def stream_out(self, command: str, out: Any, *, max_bytes: int, timeout: float) -> int:
        (entry,) = self.store.root.glob("*/*.tar")
        self.saved_over = entry.read_bytes()  # readers still find the good entry while this one is written
        out.write(b"new tar")
        return 7


def _bound(setup: RepoSetup, sandbox: FakeSandbox, checkout: Path) -> Any:
    bound = setup.bind(lambda _config, _run_id: sandbox)(SandboxConfig(), "run")
    bound.copy_in(checkout)
    return bound


def test_only_setup_on_the_trusted_default_branch_head_is_stored(tmp_path: Path) -> None:
    checkout = _repo(tmp_path / "repo", {"requirements.txt": "six\n", "app.py": "x = 1\n"})
    store = SetupStore(tmp_path / "cache", max_total=1 << 20)
    branch = RepoSetup("o/r", SetupOptions(timeout=60, store=store))  # a follow-up on mini-fix/issue-N
    run_setup(_bound(branch, _Streaming(), checkout), ["true"], networked=False, checkout=checkout)
    assert not branch.trusts(checkout) and not list(store.root.glob("*/*.tar"))  # setup ran, nothing stored

    default = RepoSetup("o/r", SetupOptions(timeout=60, store=store))  # a fix on the default branch's head
    default.trust(checkout, gitops.head(checkout))
    run_setup(_bound(default, _Streaming(), checkout), ["true"], networked=False, checkout=checkout)
    assert default.trusts(checkout) and len(list(store.root.glob("*/*.tar"))) == 1

    (checkout / "app.py").write_text("x = 2\n")  # the checkout moved on (a commit on top): no longer trusted
    subprocess.run(["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "2"],
                   check=True)  # fmt: skip
    assert not default.trusts(checkout) and not default.trusts(tmp_path)
    assert RepoSetup("o/r", SetupOptions(timeout=60), trust_clean_trees=True).trusts(tmp_path)  # `mini-fix run`


def test_a_failed_restore_on_an_untrusted_tree_neither_drops_nor_replaces_the_entry(tmp_path: Path) -> None:
    checkout = _repo(tmp_path / "repo", {"requirements.txt": "six\n"})
    store = SetupStore(tmp_path / "cache", max_total=1 << 20)
    key = setup_key(["true"], "sha256:" + "e" * 64, False, checkout)
    _put(store, "o/r", key, b"good tar")
    entry = store.path("o/r", key)
    good = (entry.read_bytes(), entry.with_suffix(".sha256").read_text())

    branch = RepoSetup("o/r", SetupOptions(timeout=60, store=store))
    sandbox = _Restoring(store, tmp_path / "home")
    run_setup(_bound(branch, sandbox, checkout), ["true"], networked=False, checkout=checkout)

    assert (entry.read_bytes(), entry.with_suffix(".sha256").read_text()) == good  # kept, whole
    assert sandbox.saved_over == b""  # nothing written over it
    assert branch.summary().startswith("ran in ")  # undone, then setup ran

    default = RepoSetup("o/r", SetupOptions(timeout=60, store=store))  # the same failure on the trusted tree
    default.trust(checkout, gitops.head(checkout))
    sandbox = _Restoring(store, tmp_path / "home")
    run_setup(_bound(default, sandbox, checkout), ["true"], networked=False, checkout=checkout)
    assert sandbox.saved_over == b"good tar"  # never dropped first: the old entry was there while writing
    handle = store.open("o/r", key)
    assert handle is not None and handle.read() == b"new tar"  # then replaced by the trusted setup's result
    handle.close()


def test_setup_that_rewrites_tracked_files_leaves_nothing_in_the_change(tmp_path: Path) -> None:
    checkout = _repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "hi\n"})
    sandbox = FakeSandbox()
    sandbox.copy_in(checkout)
    setup = [
        "sed -i 's/return a - b/return a + b  # BACKDOOR/' calc.py",
        "git update-index --skip-worktree calc.py",  # hidden from the sandbox's own git
        "rm README.md && mkdir -p node_modules && echo pkg > node_modules/pkg.js",
    ]
    excludes = run_setup(sandbox, setup, networked=False, checkout=checkout)
    sandbox.execute("echo '# the agent' >> README.md")
    change = take_change(sandbox, checkout, tmp_path / "export", max_bytes=1 << 20, exclude=excludes)
    assert change.paths == ["README.md"] and "BACKDOOR" not in change.diff
    assert "return a - b" in sandbox.execute("cat calc.py").output  # the agent starts from the commit's file
