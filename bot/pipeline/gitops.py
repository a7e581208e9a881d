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


def _auth_config(token: str) -> list[str]:
    # A global -c is not persisted, unlike `git clone -c`, which writes into .git/config.
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return ["-c", f"http.extraHeader=Authorization: Basic {basic}", "-c", "credential.helper="]


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
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> str:
    """Run git; raise GitError(what + scrubbed stderr) on failure."""
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", **(env or {})}
    command = ["git", *(_auth_config(token) if token else []), *args]
    try:
        proc = subprocess.run(
            command,
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"{what}: timed out after {timeout:.0f}s") from None
    except OSError as exc:
        raise GitError(f"{what}: {exc.strerror}") from None
    if proc.returncode != 0:
        detail = _scrub(proc.stderr.strip() or proc.stdout.strip(), token)[-2000:]
        raise GitError(f"{what} failed (exit {proc.returncode}): {detail}")
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
    globs = list(extra_globs)
    return [p for p in changed_paths(diff) if p.startswith(PROTECTED_PREFIXES) or _matches(p, globs)]


def _matches(path: str, globs: list[str]) -> bool:
    return any(path.startswith(g) if g.endswith("/") else fnmatch.fnmatchcase(path, g) for g in globs)
