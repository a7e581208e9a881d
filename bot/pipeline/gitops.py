"""git on the worker: clone, apply the diff, commit as the bot, force-push; the token never hits disk."""

from __future__ import annotations

import base64
import codecs
import fnmatch
import os
import re
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from bot.github.gateway import BotIdentity

PROTECTED_PREFIXES = (".github/workflows/",)
PUSH_ATTEMPTS = 3
_HEADER = re.compile(r"^diff --git (.+)$")
_RENAME = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")


class GitError(Exception):
    """A git command failed; the message never holds the token or the command line."""


def branch_name(issue: int) -> str:
    """The one branch mini-fix uses for an issue (force-pushed on every run)."""
    return f"mini-fix/issue-{issue}"


def _auth_env(token: str) -> dict[str, str]:
    # Config from the environment: not on argv (world-readable in /proc), not persisted into .git/config.
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
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
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return text.replace(basic, "***").replace(token, "***")


def _git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    token: str | None = None,
    what: str,
    stdin: str | bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> str:
    """Run git; its output as text (non-UTF-8 bytes kept as surrogate escapes); GitError on failure."""
    return git_bytes(args, cwd=cwd, token=token, what=what, stdin=stdin, env=env, timeout=timeout).decode(
        "utf-8", "surrogateescape"
    )


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
        raise GitError(f"{what}: timed out after {timeout:.0f}s") from None
    except OSError as exc:
        raise GitError(f"{what}: {exc.strerror}") from None
    if proc.returncode != 0:
        text = (proc.stderr.strip() or proc.stdout.strip()).decode("utf-8", "replace")
        raise GitError(f"{what} failed (exit {proc.returncode}): {_scrub(text, token)[-2000:]}")
    return proc.stdout


def clone(url: str, token: str, dest: Path, *, branch: str | None = None, depth: int | None = None) -> None:
    """Clone `url` into `dest`, authenticating with an HTTP header only."""
    args = ["clone", "--quiet", "--no-tags"]
    if depth:
        args += ["--depth", str(depth)]
    if branch:
        args += ["--branch", branch]
    _git([*args, "--", url, str(dest)], token=token, what="git clone")


def apply_diff(repo: Path, diff: str) -> None:
    """Apply a `git diff --binary` patch to the working tree and the index."""
    _git(["apply", "--binary", "--index", "--whitespace=nowarn", "-"], cwd=repo, stdin=diff, what="git apply")


def commit(repo: Path, identity: BotIdentity, message: str) -> str:
    """Commit the index as the bot; return the new commit's sha."""
    who = {
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }
    _git(["commit", "--quiet", "--no-verify", "-F", "-"], cwd=repo, stdin=message, env=who, what="git commit")
    return _git(["rev-parse", "HEAD"], cwd=repo, what="git rev-parse").strip()


def push(repo: Path, token: str, branch: str, *, attempts: int = PUSH_ATTEMPTS) -> None:
    """Force-push HEAD to `branch` on origin, retrying transient failures."""
    for attempt in range(1, attempts + 1):
        try:
            _git(
                ["push", "--force", "--quiet", "origin", f"HEAD:refs/heads/{branch}"],
                cwd=repo,
                token=token,
                what="git push",
            )
            return
        except GitError:
            if attempt == attempts:
                raise
            time.sleep(attempt)


def changed_paths(diff: str) -> list[str]:
    """Every path a diff touches (both sides of renames and copies), in order, without duplicates."""
    paths: dict[str, None] = {}
    for line in diff.splitlines():
        if m := _HEADER.match(line):
            paths.update(dict.fromkeys(_header_paths(m.group(1))))
        elif m := _RENAME.match(line):
            paths[_unquote(m.group(1))] = None
    return list(paths)


def _header_paths(rest: str) -> list[str]:
    if rest.startswith('"') or rest.endswith('"'):
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        return [_unquote(p)[2:] for p in parts if len(_unquote(p)) > 2]
    n = (len(rest) - 5) // 2  # "a/P b/P": only the unrenamed case splits unambiguously
    if rest.startswith("a/") and rest[2 + n : 5 + n] == " b/" and rest[2 : 2 + n] == rest[5 + n :]:
        return [rest[2 : 2 + n]]
    return []  # a rename: its `rename from/to` lines name the paths


def _unquote(path: str) -> str:
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = codecs.escape_decode(path[1:-1].encode())[0]
        return raw.decode("utf-8", errors="replace")
    return path


def protected_paths(diff: str, extra_globs: Iterable[str] = ()) -> list[str]:
    """Paths in `diff` the App may not push: workflows (no `workflows` permission) and configured globs."""
    return protected(changed_paths(diff), extra_globs)


def protected(paths: Iterable[str], extra_globs: Iterable[str] = ()) -> list[str]:
    """The paths the App may not push; a path is also tried as a directory, so a file or symlink replacing
    `.github/workflows` is caught and `secret/**` matches `secret` itself."""
    globs = list(extra_globs)
    return [p for p in paths if any(_matches(c, globs) for c in (p, p.rstrip("/") + "/"))]


def _matches(path: str, globs: list[str]) -> bool:
    if path.startswith(PROTECTED_PREFIXES):
        return True
    return any(path.startswith(g) if g.endswith("/") else fnmatch.fnmatchcase(path, g) for g in globs)


REGULAR_MODES = (b"100644", b"100755")


def read_blob(repo: Path, path: str, *, max_bytes: int, rev: str = "HEAD") -> bytes | None:
    """A regular file's bytes from git's objects at `rev` (never the working tree); None when it is absent, not
    a regular file (a symlink, a gitlink, a directory) or larger than `max_bytes`."""
    listing = git_bytes(["ls-tree", "-z", "--long", rev, "--", path], cwd=repo, what="git ls-tree")
    entry = listing.split(b"\0", 1)[0]
    meta, _, name = entry.partition(b"\t")
    fields = meta.split()
    if len(fields) != 4 or name != path.encode() or fields[0] not in REGULAR_MODES or fields[1] != b"blob":
        return None
    if not fields[3].isdigit() or int(fields[3]) > max_bytes:
        return None
    return git_bytes(["cat-file", "blob", fields[2].decode()], cwd=repo, what="git cat-file")


REPO_FILES_LIMIT = 200  # paths listed in the agent's task; a bigger repository gets the first ones and a count


def repo_files(repo: Path, *, limit: int = REPO_FILES_LIMIT) -> str:
    """The checkout's tracked files, one per line (git's quoting), capped; empty when it is not a git repository."""
    try:
        listed = _git(["ls-files"], cwd=repo, what="list files", timeout=60).splitlines()
    except GitError:
        return ""
    shown = "\n".join(listed[:limit])
    more = len(listed) - limit
    return f"{shown}\n... and {more} more files" if more > 0 else shown
