"""What the fake forges (fake_github.py, fake_gitlab.py) share: a threaded HTTP server on 127.0.0.1 with its
bare repositories, a request handler that answers injected faults first, then git smart HTTP through
`git http-backend`, then the forge's REST routes, and the JSON and git plumbing under both.

A forge subclasses `FakeForge` (its state, seeding and REST routes' data) and `ForgeHandler` (how it recognises
a git path, authenticates, and dispatches REST); everything here behaves the same for both.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

from tests.support.fake_github_faults import Fault, Faults

Reply = tuple[int, Any]


def find_route(routes: Sequence[tuple[Any, ...]], method: str, path: str) -> tuple[Any, dict[str, str]] | None:
    """The first route `(method, pattern, ...)` whose pattern matches all of `path`, and its named groups."""
    for route in routes:
        if route[0] == method and (m := re.fullmatch(route[1], path)):
            return route, m.groupdict()
    return None


class ForgeHandler(BaseHTTPRequestHandler):
    """One request to a fake forge; `forge` is the FakeForge it serves (set on a subclass by FakeForge.start)."""

    forge: Any
    git_path: re.Pattern[str]  # git smart HTTP requests: the rest is REST
    realm: str  # the Basic realm a refused git request names
    git_fault_json = False  # whether an injected git fault carries the JSON body (else: an empty one)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        git = self.git_path.match(url.path)
        body = self._body()  # read first, so a client sees any answer and not a reset connection
        if fault := self.forge.faults.take(method, url.path):  # injected answers (fake_github_faults.py)
            return self._fault(method, url.path, fault, git is not None)
        if git:
            return self._git(method, git, url, body)
        self.forge.requests.append((method, url.path))
        self._rest(method, url, body)

    def _fault(self, method: str, path: str, fault: Fault, git: bool) -> None:
        if git:  # the request never reaches the repository
            self.forge.git_requests.append((path, fault.status))
            if not self.git_fault_json:
                return self._send_empty(fault.status, fault.headers)
        else:
            self.forge.requests.append((method, path))
        self._send(fault.status, fault.body or {"message": "injected"}, fault.headers)

    def _rest(self, method: str, url: SplitResult, body: bytes) -> None:
        raise NotImplementedError

    def _git(self, method: str, match: re.Match[str], url: SplitResult, body: bytes) -> None:
        raise NotImplementedError

    # -- bodies --------------------
    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        """JSON, or plain text for a str (a log, a raw file); a 302 redirects to `data["location"]`."""
        if status == 302:  # a redirect to a short-lived URL (GitHub's Actions logs)
            return self._send_empty(302, {"Location": data["location"]})
        text = isinstance(data, str)
        raw = b"" if status == 204 else data.encode() if text else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if text else "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _send_empty(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    # -- git smart HTTP --------------------
    def _basic_auth(self) -> tuple[str, str] | None:
        """(user, password) of HTTP Basic auth, as git sends a token; None without it."""
        scheme, _, credential = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "basic":
            return None
        user, _, password = base64.b64decode(credential).decode().partition(":")
        return user, password

    def _git_refuse(self, path: str) -> None:
        self.forge.git_requests.append((path, 401))
        self._send_empty(401, {"WWW-Authenticate": f'Basic realm="{self.realm}"'})

    def _git_backend(self, method: str, url: SplitResult, body: bytes, user: str, **extra: str) -> None:
        """Serve the request with `git http-backend` over the forge's root (`extra`: more CGI environment)."""
        self.forge.git_requests.append((url.path, 200))
        env = {
            "PATH": os.environ["PATH"],
            "GIT_PROJECT_ROOT": str(self.forge.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": url.path,
            "REQUEST_METHOD": method,
            "QUERY_STRING": url.query,
            "REMOTE_USER": user,
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_CONFIG_NOSYSTEM": "1",
            **extra,
        }
        proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        headers = [line.split(":", 1) for line in head.decode().split("\r\n") if ":" in line]
        status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
        self.send_response(status)
        for key, value in headers:
            if key.lower() != "status":
                self.send_header(key, value.strip())
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class FakeForge:
    """A fake forge's server and bare repositories; subclasses hold the state their routes read and write."""

    handler: type[ForgeHandler]

    def __init__(self, prefix: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))  # bare repositories, as git http-backend serves them
        self.requests: list[tuple[str, str]] = []  # (method, path) of every REST request
        self.git_requests: list[tuple[str, int]] = []  # (path, status) of every git request
        self.faults = Faults()  # injected answers (a 429 with Retry-After, a 502 to git), consulted first
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.base_url = ""

    # -- lifecycle --------------------
    def start(self, host: str = "127.0.0.1") -> str:
        """Serve on a free port of `host` (127.0.0.1, or a docker bridge's gateway for containers); return the URL."""
        handler = type("Handler", (self.handler,), {"forge": self})
        self._server = ThreadingHTTPServer((host, 0), handler)
        self.base_url = f"http://{host}:{self._server.server_address[1]}"
        # shutdown() waits for serve_forever's next poll: 0.5 s by default, paid by every test that stops a fake
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving and remove the bare repositories."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- repositories --------------------
    def _bare(self, repo: str) -> Path:
        """The bare repository of `repo` (a GitHub `owner/name`, a GitLab project path)."""
        raise NotImplementedError

    def _seed(self, bare: Path, work: Path, files: dict[str, str], default_branch: str) -> None:
        """A pushable bare repository with one commit holding `files` on `default_branch`."""
        work.mkdir(parents=True)
        for path, text in files.items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(text)
        git_run(["git", "init", "-q", "--bare", "-b", default_branch, str(bare)])
        git_run(["git", "-C", str(bare), "config", "http.receivepack", "true"])
        git_run(["git", "init", "-q", "-b", default_branch, str(work)])
        git_run(["git", "-C", str(work), "add", "-A"])
        git_run(["git", "-C", str(work), "-c", "user.name=Seed", "-c", "user.email=seed@example.com",
                 "commit", "-qm", "Initial commit"])  # fmt: skip
        git_run(["git", "-C", str(work), "push", "-q", str(bare), f"HEAD:refs/heads/{default_branch}"])

    def branch_head(self, repo: str, branch: str) -> str | None:
        """The commit a branch points at, or None."""
        proc = subprocess.run(["git", "--git-dir", str(self._bare(repo)), "rev-parse", "--verify", "-q",
                               f"refs/heads/{branch}"], capture_output=True, text=True, check=False)  # fmt: skip
        return proc.stdout.strip() or None

    def show(self, repo: str, rev: str, path: str) -> str:
        """A file's content at a revision of the bare repository."""
        return git_run(["git", "--git-dir", str(self._bare(repo)), "show", f"{rev}:{path}"])


def git_run(cmd: list[str]) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
