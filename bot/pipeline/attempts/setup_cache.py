"""A repository's setup, fast the second time: its result saved as one tar stream after a successful setup and
restored into the next sandbox of the same repository with the same key, instead of running setup again.

Why a tar and not a Docker volume snapshot or `docker commit`: the working directory and HOME are tmpfs mounts
each sandbox owns (a commit captures neither; a shared volume would let one sandbox write into another's start,
and would need its own cleanup and size bound on the engine). A tar file per (repository, key) is copied into a
sandbox that is already network-less and locked down, bounded like any file, and dropped like one.

The stream is written by the image's `tar` inside the sandbox, as the action user, and extracted the same way
(through an engine exec's stdout and stdin, `sandbox.pipes`): the worker only counts, hashes and stores the bytes,
never parses or extracts them. (The engine's archive API cannot read the tmpfs HOME, where toolchain caches such
as GOPATH's modules live, and would extract on the engine's side.) It holds what setup added under the working
directory (untracked and ignored files, e.g. node_modules, .venv, target) and the action user's HOME; tracked files
setup rewrote and changes inside `.git` are not kept (`run_setup` lays the commit's files back after setup anyway).

Who may write an entry: only setup that ran on a tree the App trusts (`RepoSetup.trust`: the App's clone of the
default branch's head, no agent-written commit in it; `trust_clean_trees` for the operator's own trees in
`mini-fix run` and eval). The key names the dependency files and the files a setup command names, not everything
setup executes (an npm `postinstall`, `build.rs`, a Makefile target, `python -m pkg.mod`), so a PR branch carrying
agent-written code often has the default branch's key: a job on it (a CI or review follow-up, a retry) runs setup
and may restore an entry, but never stores one, and a failed restore there changes no entry. Every entry was
therefore made by the default branch's own setup, whichever sandbox (an attempt's, verify's) restores it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import structlog

from bot import metrics
from bot.pipeline.attempts.setup_key import setup_key
from bot.pipeline.attempts.setup_store import CorruptEntry, SetupStore
from bot.pipeline.git import gitops
from bot.settings import Settings
from sandbox.base import DelegatingSandbox, Sandbox, SandboxConfig, SandboxError

log = structlog.get_logger(__name__)
SandboxFactory = Callable[[SandboxConfig, str], Sandbox]
FAILURE_CHARS = 300  # of a failed setup's reason in the status comment
STREAM_TIMEOUT = 900  # seconds to write or read back one entry inside the sandbox
CLEAN_TREE = 'test -z "$(git status --porcelain --ignored -z | head -c 1)"'
# What setup left: untracked (ignored too) files under the working directory, and HOME.
SAVE = (
    "set -o pipefail; {{ git ls-files -z --others --directory "
    '| sed -z \'s|^|{top}/|\'; if [ -d "$HOME" ] && [ -w "$HOME" ]; then printf \'%s\\0\' "${{HOME#/}}"; fi; }} '
    "| tar -c -f - -C / --null --no-unquote --verbatim-files-from -T -"
)
RESTORE = "tar -x -f - -C / -p --no-same-owner"
# Undo a restore that failed part-way (the tree was clean before it), so setup runs on the checkout as copied in.
UNDO = (
    'git reset -q --hard && git clean -q -ffdx && if [ -d "$HOME" ] && [ -w "$HOME" ]; then '
    'chmod -R u+w "$HOME"; find "$HOME" -mindepth 1 -delete; fi'
)
_TOP = re.compile(r"[A-Za-z0-9._/-]+")


@runtime_checkable
class Streams(Protocol):
    """A sandbox that can stream bytes out of and into a command, and names its image (DockerSandbox)."""

    def image_id(self) -> str: ...
    def stream_out(self, command: str, out: IO[bytes], *, max_bytes: int, timeout: float) -> int: ...
    def stream_in(self, command: str, src: IO[bytes], *, timeout: float) -> None: ...


@dataclass(frozen=True)
class SetupOptions:
    """The deployment's setup rules: the time limit, and the cache (None: off) with its per-entry cap."""

    timeout: int
    store: SetupStore | None = None
    max_entry_bytes: int = 2 << 30

    @classmethod
    def from_settings(cls, settings: Settings) -> SetupOptions:
        """From MINIFIX_SETUP_TIMEOUT, MINIFIX_SETUP_CACHE_BYTES (0: no cache) and MINIFIX_SETUP_CACHE_MAX_BYTES."""
        store = None
        if settings.setup_cache_bytes > 0:
            store = SetupStore(settings.data_dir / "setup-cache", settings.setup_cache_bytes)
        return cls(settings.setup_timeout, store, settings.setup_cache_max_bytes)


@dataclass
class Lookup:
    """What the cache said before a sandbox's setup: restored, or the key to store under after it (None: don't),
    and whether that store replaces an entry that failed to restore on this trusted tree."""

    restored: bool
    key: str | None = None
    replace: bool = False


@dataclass
class RepoSetup:
    """One repository's setup in one job or run: its rules, and how each of its sandboxes' setups went."""

    repo: str
    options: SetupOptions
    on_report: Callable[[str], None] = lambda _summary: None
    trust_clean_trees: bool = False  # the operator's own trees (`mini-fix run`, eval): any clean checkout may store
    _trusted: dict[Path, str] = field(default_factory=dict)  # checkout -> the commit it was trusted at
    _ran: list[float] = field(default_factory=list)
    _restored: list[float] = field(default_factory=list)
    _failed: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def bind(self, factory: SandboxFactory) -> SandboxFactory:
        """A factory whose sandboxes carry this setup (run_setup finds it on them)."""
        return lambda config, run_id: SetupSandbox(factory(config, run_id), self)

    def trust(self, checkout: Path, commit: str) -> None:
        """Setup run on `checkout` may be stored: the App's clone of the default branch's head `commit` (a fix, a
        `--fresh` retry). A job building on a PR branch (follow-ups, retries) never calls this: its commits are
        agent-written, and what its setup executes is not all in the key."""
        self._trusted[checkout.resolve()] = commit

    def trusts(self, checkout: Path) -> bool:
        """Whether setup on `checkout` may write an entry: a checkout `trust` named, still at the commit it was
        trusted at (the host's git says, not the sandbox), or any checkout where `trust_clean_trees`."""
        if self.trust_clean_trees:
            return True
        commit = self._trusted.get(checkout.resolve())
        if commit is None:
            return False
        try:
            return gitops.head(checkout) == commit
        except gitops.GitError:
            return False

    def lookup(self, sandbox: Sandbox, commands: list[str], networked: bool, checkout: Path | None) -> Lookup:
        """Restore the cached result into `sandbox` when there is one for its key; else say where to store it (a
        trusted checkout only: `trusts`)."""
        store = self.options.store
        if store is None or checkout is None or not isinstance(sandbox, Streams):
            return Lookup(False)
        trusted = self.trusts(checkout)
        try:
            key = setup_key(commands, sandbox.image_id(), networked, checkout)
        except (OSError, SandboxError) as exc:  # the cache is an optimisation: setup runs as it always did
            _count("skip", self.repo, "", why=f"no key: {exc}")
            return Lookup(False)
        if sandbox.execute(CLEAN_TREE).returncode != 0:  # a tree changed before setup is not the one the key names
            _count("skip", self.repo, key, why="the tree differs from its commit before setup")
            return Lookup(False)
        try:
            entry = store.open(self.repo, key)
        except CorruptEntry as exc:  # the worker's own file is damaged, whatever the tree: it goes
            store.drop(self.repo, key)
            _count("miss", self.repo, key, why=f"corrupt entry dropped: {exc}")
            return self._to_store(key, trusted)
        if entry is None:
            _count("miss", self.repo, key)
            return self._to_store(key, trusted)
        return self._restore(sandbox, key, entry, trusted)

    def _to_store(self, key: str, trusted: bool) -> Lookup:
        if not trusted:
            _count("skip", self.repo, key, why="not stored: the checkout is not the trusted default branch's head")
        return Lookup(False, key if trusted else None)

    def _restore(self, sandbox: Sandbox, key: str, entry: IO[bytes], trusted: bool) -> Lookup:
        """Restore `entry`. When that fails the entry stays (the tree may be one the App did not make), the
        sandbox is undone and setup runs; only on a trusted tree does that setup's result then replace it."""
        started = time.monotonic()
        try:
            with entry:
                assert isinstance(sandbox, Streams)
                sandbox.stream_in(RESTORE, entry, timeout=STREAM_TIMEOUT)
        except SandboxError as exc:
            what = "to be replaced by this trusted setup" if trusted else "kept: the tree is not a trusted one"
            _count("miss", self.repo, key, why=f"restore failed, entry {what}: {exc}")
            _undo(sandbox)
            return Lookup(False, key, replace=True) if trusted else Lookup(False)
        seconds = time.monotonic() - started
        self._report(self._restored, seconds)
        _count("hit", self.repo, key, seconds=round(seconds, 3))
        return Lookup(True)

    def ran(self, sandbox: Sandbox, lookup: Lookup, seconds: float, cwd: str) -> None:
        """After a setup that ran and succeeded: say how long it took, and save its result under the lookup's key
        (unless over the cap, or another sandbox of this process is saving it)."""
        self._report(self._ran, seconds)
        store, key = self.options.store, lookup.key
        if store is None or key is None or not isinstance(sandbox, Streams):
            return
        top = cwd.strip("/")
        if not _TOP.fullmatch(top) or not store.claim(self.repo, key, replace=lookup.replace):
            return  # another sandbox of this process is storing the same key now
        cap = min(self.options.max_entry_bytes, store.max_total)  # the total's bound holds while one is written
        command, started = SAVE.format(top=top), time.monotonic()
        try:
            size = store.write(self.repo, key, lambda out: sandbox.stream_out(command, out, max_bytes=cap,
                                                                               timeout=STREAM_TIMEOUT))  # fmt: skip
        except (SandboxError, OSError) as exc:  # over the cap, a failing tar, the worker's disk full: not cached
            _count("skip", self.repo, key, why=f"not cached: {exc} (MINIFIX_SETUP_CACHE_MAX_BYTES is {cap:,})")
            return
        _count("store", self.repo, key, bytes=size, seconds=round(time.monotonic() - started, 3))

    def summary(self) -> str:
        """What setup did in this job's sandboxes, for the status comment and the PR: `ran in 41 s` and/or
        `restored from cache in 2 s`, with how many sandboxes when more than one, or how it failed."""
        with self._lock:
            parts = [_said("ran in", self._ran), _said("restored from cache in", self._restored), self._failed]
        return ", ".join(part for part in parts if part)

    @property
    def failure(self) -> str:
        """How a tolerated setup failed ('' when it did not)."""
        with self._lock:
            return self._failed

    def failed(self, seconds: float, detail: str) -> None:
        """A tolerated setup failed: said once (its first line and its output's last), later sandboxes skip it."""
        lines = [line.strip() for line in detail.splitlines() if line.strip()]
        why = lines[0] if len(lines) < 2 else f"{lines[0]} {lines[-1]}"
        with self._lock:
            first, self._failed = (
                not self._failed,
                self._failed or (f"**failed** after {seconds:.0f} s, so the tests may not run: {why[:FAILURE_CHARS]}"),
            )
        if first:  # attempts failing at once say it once
            self.on_report(self.summary())

    def _report(self, into: list[float], seconds: float) -> None:
        with self._lock:
            into.append(seconds)
        self.on_report(self.summary())


class SetupSandbox(DelegatingSandbox):
    """A sandbox of one repository's job: the real one, plus that repository's setup (what it copied in first is
    the checkout its setup key is read from)."""

    def __init__(self, inner: Sandbox, setup: RepoSetup) -> None:
        super().__init__(inner)
        self.setup = setup
        self.checkout: Path | None = None

    def copy_in(self, src: Path, dest: str | None = None) -> None:
        """Copy in, remembering the first tree copied to the working directory."""
        self.inner.copy_in(src, dest)
        if dest is None and self.checkout is None:
            self.checkout = Path(src)


def cache_owner(full_name: str, repo_id: int | None) -> str:
    """Whose entries a job's setup may use: the repository's name and GitHub's id for it. With the id, a name
    deleted and taken again by someone else, or given to another repository after a rename, never finds the old
    repository's entries (what its setup installed may be private)."""
    return f"{full_name}#{repo_id}" if repo_id is not None else full_name


def setup_of(sandbox: Sandbox) -> tuple[RepoSetup | None, Path | None]:
    """The repository setup a sandbox carries, and the checkout it was given (None, None: a bare sandbox)."""
    if isinstance(sandbox, SetupSandbox):
        return sandbox.setup, sandbox.checkout
    return None, None


def _undo(sandbox: Sandbox) -> None:
    result = sandbox.execute(UNDO, timeout=STREAM_TIMEOUT)
    if result.returncode != 0:
        raise SandboxError(f"a failed setup cache restore could not be undone: {result.output[-500:]}")


def _said(what: str, seconds: list[float]) -> str:
    if not seconds:
        return ""
    count = f" ({len(seconds)} sandboxes)" if len(seconds) > 1 else ""
    return f"{what} {max(seconds):.0f} s{count}"


def _count(result: str, repo: str, key: str, **fields: Any) -> None:
    metrics.SETUP_CACHE.labels(result=result).inc()
    log.info(f"setup_cache.{result}", cache_repo=repo, key=key[:12], **fields)
