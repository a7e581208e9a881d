"""git on the worker: clone, fetch, apply the diff, commit as the bot, push with a lease; the token never hits disk."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import tenacity

from bot.github.gateway import BotIdentity, git_username

REMOTE_ATTEMPTS = 4  # tries of one clone, fetch or push when GitHub's answer is transient
RETRY_WAIT = tenacity.wait_exponential(multiplier=1, min=1, max=20)  # tests set tenacity.wait_none()
Token = str | Callable[[], str]  # a token, or where to get one valid now (asked again before every try)


class GitError(Exception):
    """A git command failed; the message never holds the token or the command line."""

    def __init__(self, message: str, *, transient: bool = False, retries: int = 0) -> None:
        super().__init__(message)
        self.transient, self.retries = transient, retries


class LeaseRejected(GitError):
    """The branch moved since the job started: the push was refused rather than overwrite someone's commits."""


# What git prints when the server or the connection failed, not the request: worth another try.
_TRANSIENT = re.compile(
    r"returned error: 5\d\d|HTTP 5\d\d|\b50[0-4]\b|connection (?:reset|refused|timed out)|timed out|"
    r"early EOF|unexpected disconnect|the remote end hung up|failed to connect|could not resolve host|"
    r"empty reply from server|recv failure|send failure|SSL_(?:read|write)|gnutls_handshake",
    re.IGNORECASE,
)
# What git prints when GitHub refused the token or the repository: another try would fail the same way.
_REFUSED = re.compile(
    r"returned error: 40[134]|HTTP 40[134]|authentication failed|repository not found|could not read username",
    re.IGNORECASE,
)
_LEASE = re.compile(r"\(stale info\)|\(fetch first\)|\(non-fast-forward\)", re.IGNORECASE)


def is_transient(stderr: str) -> bool:
    """Whether git's message says the server or the network failed (5xx, reset, timeout), not a refusal."""
    return bool(_TRANSIENT.search(stderr)) and not is_refusal(stderr)


def is_refusal(stderr: str) -> bool:
    """Whether git's message says GitHub refused the token or the repository (401, 403, 404)."""
    return bool(_REFUSED.search(stderr))


def branch_name(issue: int) -> str:
    """The one branch mini-fix uses for an issue (force-pushed on every run)."""
    return f"mini-fix/issue-{issue}"


def _auth_env(token: str) -> dict[str, str]:
    # Config from the environment: not on argv (world-readable in /proc), not persisted into .git/config.
    basic = base64.b64encode(f"{git_username(token)}:{token}".encode()).decode()  # GitLab's: `oauth2`
    pairs = [("http.extraHeader", f"Authorization: Basic {basic}"), ("credential.helper", "")]
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for n, (key, value) in enumerate(pairs):
        env |= {f"GIT_CONFIG_KEY_{n}": key, f"GIT_CONFIG_VALUE_{n}": value}
    return env


_KEPT_ENV = (
    "PATH",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def hardened_env() -> dict[str, str]:
    """The worker's git environment: no system or global config, no HOME, no prompts, C locale."""
    keep = {k: v for k, v in os.environ.items() if k in _KEPT_ENV}
    return {
        **keep,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "HOME": os.devnull,
        "XDG_CONFIG_HOME": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "LC_ALL": "C",
    }


# Settings that an agent-written config or attribute could otherwise turn against the host's git.
HARDENED_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.symlinks=true",
    "core.quotePath=true",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.renames=false",
    "diff.external=",
)


def _scrub(text: str, token: str | None) -> str:
    if not token:
        return text
    basic = base64.b64encode(f"{git_username(token)}:{token}".encode()).decode()
    return text.replace(basic, "***").replace(token, "***")


class GitOptions(TypedDict, total=False):
    """git_bytes' keyword arguments, for the text-returning wrapper."""

    cwd: Path | None
    token: str | None
    stdin: str | bytes | None
    env: dict[str, str] | None
    timeout: float


def _git(args: Sequence[str], *, what: str, **options: Unpack[GitOptions]) -> str:
    """Run git; its output as text (non-UTF-8 bytes kept as surrogate escapes); GitError on failure."""
    return git_bytes(args, what=what, **options).decode("utf-8", "surrogateescape")


def git_bytes(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    token: str | None = None,
    what: str,
    stdin: str | bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> bytes:
    """Run the worker's git under the hardened configuration; raise GitError(what + scrubbed stderr) on failure."""
    full_env = {**hardened_env(), **(_auth_env(token) if token else {}), **(env or {})}
    config = [arg for item in HARDENED_CONFIG for arg in ("-c", item)]
    data = stdin.encode("utf-8", "surrogateescape") if isinstance(stdin, str) else stdin
    try:
        proc = subprocess.run(
            ["git", *config, *args],
            cwd=cwd,
            input=data,
            capture_output=True,
            env=full_env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"{what}: timed out after {timeout:.0f}s", transient=True) from None
    except OSError as exc:
        raise GitError(f"{what}: {exc.strerror}") from None
    if proc.returncode != 0:
        text = _scrub((proc.stderr.strip() or proc.stdout.strip()).decode("utf-8", "replace"), token)[-2000:]
        kind = LeaseRejected if _LEASE.search(text) else GitError
        raise kind(f"{what} failed (exit {proc.returncode}): {text}", transient=is_transient(text))
    return proc.stdout


def _remote(args: Sequence[str], token: Token, *, what: str, cwd: Path | None = None) -> str:
    """A git command that talks to GitHub: a token valid now for every try, transient failures retried with
    backoff (never a refusal: 401/403/404); the last failure says how often it was retried."""
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(REMOTE_ATTEMPTS),
        wait=RETRY_WAIT,
        retry=tenacity.retry_if_exception(lambda exc: isinstance(exc, GitError) and exc.transient),
        reraise=True,
    )
    tries = 0
    try:
        for attempt in retrying:
            with attempt:
                tries += 1
                return _git(args, cwd=cwd, token=token() if callable(token) else token, what=what)
    except GitError as exc:
        if exc.transient and tries > 1:
            raise type(exc)(f"{exc} (retried {tries - 1} times)", transient=True, retries=tries - 1) from exc
        raise
    raise AssertionError("unreachable: tenacity either returns or re-raises")


def clone(url: str, token: Token, dest: Path, *, branch: str | None = None, depth: int | None = None) -> None:
    """Clone `url` into `dest`, authenticating with an HTTP header only; a half-made clone is removed before
    another try."""
    args = ["clone", "--quiet", "--no-tags"]
    if depth:
        args += ["--depth", str(depth)]
    if branch:
        args += ["--branch", branch]

    def fresh() -> str:
        if dest.exists():
            shutil.rmtree(dest)
        return token() if callable(token) else token

    _remote([*args, "--", url, str(dest)], fresh, what="git clone")


def remote_head(url: str, token: Token, branch: str) -> str | None:
    """The commit `branch` points at on the remote, or None when it does not exist."""
    out = _remote(["ls-remote", "--heads", "--", url, f"refs/heads/{branch}"], token, what="git ls-remote")
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    return None


def fetch(repo: Path, token: Token, branch: str, *, depth: int | None = None) -> str:
    """Fetch `branch` from origin; the commit it points at now."""
    args = ["fetch", "--quiet", "--no-tags", *(["--depth", str(depth)] if depth else []), "origin"]
    _remote([*args, f"+refs/heads/{branch}:refs/mini-fix/fetched"], token, cwd=repo, what="git fetch")
    return head(repo, "refs/mini-fix/fetched")


def origin_url(repo: Path) -> str:
    """The URL the checkout was cloned from."""
    return _git(["remote", "get-url", "origin"], cwd=repo, what="git remote").strip()


def head(repo: Path, rev: str = "HEAD") -> str:
    """The commit `rev` names in the checkout."""
    return _git(
        ["rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"], cwd=repo, what="git rev-parse"
    ).strip()


def log_subjects(repo: Path, base: str, *, limit: int) -> list[str]:
    """Subjects of the commits on HEAD that `base` does not have, newest first."""
    args = ["log", "--no-show-signature", f"--max-count={limit}", "--format=%s", "--end-of-options", f"{base}..HEAD"]
    out = _git(args, cwd=repo, what="git log")
    return out.splitlines()


def diff_stat(repo: Path, base: str) -> str:
    """`git diff --stat` from `base`'s merge base with HEAD (from `base` itself when a shallow clone lacks it)."""
    try:
        return _git(
            ["diff", "--no-ext-diff", "--stat", "--end-of-options", f"{base}...HEAD"], cwd=repo, what="git diff"
        )
    except GitError:
        return _git(["diff", "--no-ext-diff", "--stat", "--end-of-options", base, "HEAD"], cwd=repo, what="git diff")


def replay_onto(repo: Path, identity: BotIdentity, base: str) -> bool:
    """Move HEAD's one commit onto `base` when it applies cleanly (True); else leave HEAD as it was (False)."""
    commit_sha = head(repo)
    base = head(repo, base)  # an object name: `checkout --detach` takes no --end-of-options
    _git(["checkout", "--quiet", "--detach", base], cwd=repo, what="git checkout")
    try:
        _git(
            ["cherry-pick", "--allow-empty", "--end-of-options", commit_sha],
            cwd=repo,
            env=_who(identity),
            what="git cherry-pick",
        )
        return True
    except GitError:
        _git(["cherry-pick", "--abort"], cwd=repo, what="git cherry-pick --abort")
        _git(["checkout", "--quiet", "--detach", commit_sha], cwd=repo, what="git checkout")
        return False


def apply_diff(repo: Path, diff: str) -> None:
    """Apply a `git diff --binary` patch to the working tree and the index."""
    _git(["apply", "--binary", "--index", "--whitespace=nowarn", "-"], cwd=repo, stdin=diff, what="git apply")


def commit(repo: Path, identity: BotIdentity, message: str) -> str:
    """Commit the index as the bot; return the new commit's sha."""
    env = _who(identity)
    _git(["commit", "--quiet", "--no-verify", "-F", "-"], cwd=repo, stdin=message, env=env, what="git commit")
    return head(repo)


def _who(identity: BotIdentity) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }


NO_BRANCH = ""  # a lease that holds only while the branch does not exist


def push(repo: Path, token: Token, branch: str, *, lease: str | None = None) -> None:
    """Push HEAD to `branch` on origin, retrying transient failures. With `lease` (the sha the job started from,
    or NO_BRANCH) the push only replaces that commit (LeaseRejected when the branch moved); without, it forces."""
    ref = f"refs/heads/{branch}"
    force = "--force" if lease is None else f"--force-with-lease={ref}:{lease}"
    _remote(["push", force, "--quiet", "origin", f"HEAD:{ref}"], token, cwd=repo, what="git push")


REGULAR_MODES = (b"100644", b"100755")


def read_blob(repo: Path, path: str, *, max_bytes: int, rev: str = "HEAD") -> bytes | None:
    """A regular file's bytes from git's objects at `rev` (never the working tree); None when it is absent, not
    a regular file (a symlink, a gitlink, a directory) or larger than `max_bytes`."""
    listing = git_bytes(["ls-tree", "-z", "--long", "--end-of-options", rev, "--", path], cwd=repo, what="git ls-tree")
    entry = listing.split(b"\0", 1)[0]
    meta, _, name = entry.partition(b"\t")
    fields = meta.split()
    if len(fields) != 4 or name != path.encode() or fields[0] not in REGULAR_MODES or fields[1] != b"blob":
        return None
    if not fields[3].isdigit() or int(fields[3]) > max_bytes:
        return None
    return git_bytes(["cat-file", "blob", "--end-of-options", fields[2].decode()], cwd=repo, what="git cat-file")


def tracked_files(repo: Path) -> list[str]:
    """The checkout's tracked files (git's quoting); none when it is not a git repository."""
    try:
        return _git(["ls-files"], cwd=repo, what="list files", timeout=60).splitlines()
    except GitError:
        return []
