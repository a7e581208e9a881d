"""The Docker engine restarted in the middle of a run: the run ends with a clear comment and no container is left.

The App runs its sandboxes on a Docker engine of the test's own (a second `dockerd` with its own socket, data and
exec roots, and a bridge of its own: `--bridge none` would make dockerd delete the main engine's `docker0`), so
restarting it touches nothing else on this machine. The scripted model holds the run
after its first action until the engine has been restarted.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from sandbox.cleanup import EXITED_GRACE_SECONDS, sweep
from tests.e2e.test_github_flow import FILES, FIX, REPO, SECRET, app_env, jobs
from tests.support import compose_stack as cs
from tests.support.app_process import AppProcess
from tests.support.compose_stack import wait_for
from tests.support.fake_github import FakeGitHub
from tests.support.model_server import ScriptedModelServer
from tests.support.webhooks import deliver, labeled

pytestmark = [pytest.mark.docker, pytest.mark.compose]
# The slim sandbox (scripts/ensure-docker.sh always builds it): the run only needs python3, and loading it into the
# private engine takes a seventh of the polyglot image's 2 GB.
SANDBOX_IMAGE = os.environ.get("MINIFIX_SLIM_SANDBOX_IMAGE", "mini-fix-sandbox:slim")


class PrivateEngine:
    """A dockerd of this test's own, restartable at will."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="mfd-"))  # short: a unix socket path has ~100 bytes
        self.host = f"unix://{self.root}/docker.sock"
        self.bridge = f"mfd{uuid.uuid4().hex[:8]}"
        self.proc: subprocess.Popen[bytes] | None = None
        subnet = f"10.213.{uuid.uuid4().int % 250 + 1}"
        for cmd in ("link add {} type bridge", f"addr add {subnet}.1/24 dev {{}}", "link set {} up"):
            subprocess.run(["ip", *cmd.format(self.bridge).split()], check=True, capture_output=True)

    def start(self) -> None:
        r = self.root
        args = ["dockerd", "--host", self.host, "--data-root", f"{r}/data", "--exec-root", f"{r}/exec",
                "--pidfile", f"{r}/docker.pid", "--bridge", self.bridge, "--iptables=false",
                "--ip-masq=false"]  # fmt: skip
        with (r / "dockerd.log").open("ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: self.docker("info").returncode == 0, 60, "the private dockerd", self.log)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # what `systemctl restart docker` sends: containers are stopped
            self.proc.wait(60)

    def docker(self, *args: str, stdin: Any = None) -> subprocess.CompletedProcess[bytes]:
        env = {**os.environ, "DOCKER_HOST": self.host}
        return subprocess.run(["docker", *args], env=env, stdin=stdin, capture_output=True)

    def sandboxes(self) -> list[str]:
        return self.docker("ps", "-aq", "--filter", "label=mini-fix").stdout.decode().split()

    def log(self) -> str:
        return (self.root / "dockerd.log").read_text(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def private_engine() -> Iterator[PrivateEngine]:
    """One private engine, with the sandbox image loaded once, for the module's tests (see `engine`)."""
    if os.environ.get("MINIFIX_SKIP_DOCKER") == "1":
        pytest.skip("MINIFIX_SKIP_DOCKER=1: Docker tests skipped on purpose")
    if not shutil.which("dockerd"):
        cs.unavailable("no dockerd here: run scripts/ensure-docker.sh (as root)")
    private = PrivateEngine()
    private.start()
    try:
        save = subprocess.Popen(["docker", "save", SANDBOX_IMAGE], stdout=subprocess.PIPE)
        loaded = private.docker("load", "-q", stdin=save.stdout)
        assert save.wait() == 0 and loaded.returncode == 0, loaded.stderr
        yield private
    finally:
        for cid in private.sandboxes():
            private.docker("rm", "-f", cid)
        private.stop()
        subprocess.run(["ip", "link", "del", private.bridge], capture_output=True)
        subprocess.run(["umount", "-R", str(private.root / "exec")], capture_output=True)
        shutil.rmtree(private.root, ignore_errors=True)


@pytest.fixture
def engine(private_engine: PrivateEngine) -> Iterator[PrivateEngine]:
    """The module's engine, running and without a sandbox at the start and at the end of each test."""
    if private_engine.proc is None or private_engine.proc.poll() is not None:
        private_engine.start()  # a test that failed between its stop and start left it down
    assert not private_engine.sandboxes(), "a sandbox left from an earlier test"
    yield private_engine
    for cid in private_engine.sandboxes():
        private_engine.docker("rm", "-f", cid)


def test_engine_restart_mid_run_ends_with_a_comment_and_no_leak(engine: PrivateEngine, tmp_path: Path) -> None:
    github = FakeGitHub()
    github.start()
    github.add_repo("acme", "calc", FILES)
    github.set_permission("alice", "write")
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    reached, released = threading.Event(), threading.Event()

    def second_step(_messages: list[dict[str, Any]]) -> str:
        reached.set()
        released.wait(120)  # the engine restarts while the run waits here, its container up
        return FIX[1]  # type: ignore[return-value]

    with ScriptedModelServer([FIX[0], second_step, FIX[2]], by_turn=True) as model:
        env = app_env(github, model, tmp_path / "data", DOCKER_HOST=engine.host, MINIFIX_SANDBOX_IMAGE=SANDBOX_IMAGE)
        app = AppProcess(env, tmp_path / "app.log").start()
        try:
            assert (
                deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET).status_code == 202
            )
            assert reached.wait(180), app.log()
            assert engine.sandboxes(), "the run's container should be up"
            engine.stop()
            engine.start()
            released.set()
            final = wait_for(lambda: [j for j in jobs(tmp_path / "data", env) if j["status"] != "running"
                                      and j["status"] != "queued"], 180, "the job to end", app.log)  # fmt: skip
            wait_for(lambda: not engine.sandboxes(), 60, "no container left", app.log)
        finally:
            released.set()
            app.stop()
            github.stop()
    comments = [c["body"] for c in github.comments_on(REPO, issue)]
    assert [j["status"] for j in final] == ["failed"] and "sandbox" in (final[0]["error"] or ""), final
    assert any("the sandbox failed" in body and "/agent retry" in body for body in comments), comments
    assert github.pulls == [] and not engine.sandboxes()


def test_the_sweep_removes_stopped_sandboxes(engine: PrivateEngine) -> None:
    """What an engine restart leaves when the worker could not remove its container: stopped, not yet expired."""
    future = str(int(time.time()) + 3600)
    labels = ["--label", "mini-fix=1", "--label", f"mini-fix.deadline={future}"]
    stopped = engine.docker("run", *labels, "--network", "none", SANDBOX_IMAGE, "true").stdout.decode()
    running = engine.docker("run", "-d", *labels, "--network", "none", SANDBOX_IMAGE, "sleep", "300")
    assert running.returncode == 0 and stopped == ""
    client = docker.DockerClient(base_url=engine.host)
    try:
        assert sweep(client, now=time.time()) == 0  # just stopped: its run may still read its exit state
        assert sweep(client, now=time.time() + EXITED_GRACE_SECONDS + 5) == 1
    finally:
        client.close()
    assert engine.sandboxes() == [running.stdout.decode().strip()[:12]]
