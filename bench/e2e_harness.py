"""Shared pieces of the end-to-end benchmarks: fake GitHub, timed model server, real App processes, cleanup.

Everything listens on 127.0.0.1. `E2E` is a context manager that removes its processes, the sandbox containers
created while it ran, and its temporary directories, whatever happens.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import docker  # noqa: E402

from tests.support.app_process import AppProcess  # noqa: E402
from tests.support.fake_github import FakeGitHub, throwaway_key  # noqa: E402
from tests.support.model_server import Reply, ScriptedModelServer, bash_reply  # noqa: E402
from tests.support.webhooks import deliver, labeled  # noqa: E402

SECRET = "bench-webhook-secret-7c2e9a"
OWNER, NAME = "acme", "calc"
REPO = f"{OWNER}/{NAME}"
CALC = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
}
SUBMIT = bash_reply("printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nadd() adds now.\\n'", "Submit.")
FIX_STEPS: list[Reply] = [
    bash_reply("cat calc.py", "Look at the code."),
    bash_reply("python3 -m unittest -q 2>&1 | tail -1", "Reproduce."),
    bash_reply("sed -i 's/a - b/a + b/' calc.py && python3 -m unittest -q", "Fix the operator."),
    SUBMIT,
]


class TimedModelServer(ScriptedModelServer):
    """The scripted model, stamping each request's arrival and reply (time.time()) in its handler."""

    def __init__(self, replies: Sequence[Reply], **kwargs: Any) -> None:
        self.arrivals: list[float] = []
        self.replied: list[float] = []
        super().__init__(replies, **kwargs)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler()
        server = self

        class Timed(base):  # type: ignore[misc]
            def do_POST(self) -> None:
                server.arrivals.append(time.time())  # one job at a time: arrivals and replies pair up in order
                super().do_POST()
                server.replied.append(time.time())

        return Timed


class TimedList(list[Any]):
    """A list that remembers when each item was appended (the fake GitHub's request log)."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def append(self, item: Any) -> None:
        self.times.append(time.time())
        super().append(item)


class ApiOnly(AppProcess):
    """`mini-fix serve --no-worker`."""

    def start(self, timeout: float = 60.0) -> ApiOnly:
        args = [sys.executable, "-m", "bot.cli", "serve", "--no-worker"]
        args += ["--host", "127.0.0.1", "--port", str(self.port)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self._wait_healthy(timeout)
        return self


def log_events(text: str, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of one event, each with `at` (epoch seconds) added."""
    found = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == event:
            record["at"] = datetime.fromisoformat(record["timestamp"]).timestamp()
            found.append(record)
    return found


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll until `predicate` returns something truthy; TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")


class E2E:
    """One fake GitHub, one timed model server, App processes sharing one data dir; all removed on exit."""

    def __init__(self, replies: Sequence[Reply], *, delay: float = 0.0) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="mini-fix-bench-"))
        self.data = self.tmp / "data"
        self.github = FakeGitHub()
        self.rest_log = self.github.requests = TimedList()  # (method, path), stamped on arrival
        self.git_log = self.github.git_requests = TimedList()  # (path, status), stamped before git runs
        self.model = TimedModelServer(replies, delay=delay, by_turn=True)
        self.procs: list[AppProcess] = []
        self.docker = docker.from_env()

    def __enter__(self) -> E2E:
        self.github.start()
        self.github.set_permission("alice", "write")
        self.model.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            for proc in self.procs:
                proc.stop()
        finally:
            self.remove_containers()
            self.model.stop()
            self.github.stop()
            self.docker.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def containers(self, job_id: str) -> list[Any]:
        """The sandbox containers of one of our jobs (other runs on this engine are left alone)."""
        return list(self.docker.containers.list(all=True, filters={"label": f"mini-fix.job-id={job_id}"}))

    def remove_containers(self) -> None:
        """Force-remove any container our jobs left behind."""
        if not self.procs or not self.data.exists():
            return
        for row in self.jobs():
            for container in self.containers(row["id"]):
                container.remove(force=True)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a real App run needs (as tests/e2e/test_github_flow.py's app_env)."""
        return {
            "MINIFIX_APP_ID": str(self.github.app_id),
            "MINIFIX_PRIVATE_KEY": throwaway_key(),
            "MINIFIX_WEBHOOK_SECRET": SECRET,
            "MINIFIX_GITHUB_API_URL": self.github.base_url,
            "MINIFIX_MODEL": "hosted_vllm/scripted",
            "MINIFIX_MODEL_API_BASE": self.model.api_base,
            "MINIFIX_DATA_DIR": str(self.data),
            "MINIFIX_WORKERS": "1",
            "MINIFIX_LOG_FORMAT": "json",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **extra,
        }

    def serve(self, *, worker: bool = True) -> AppProcess:
        """Start `mini-fix serve` (with its embedded worker unless worker=False) and wait for it."""
        log = self.tmp / f"serve-{len(self.procs)}.log"
        proc = (AppProcess(self.env(), log) if worker else ApiOnly(self.env(), log)).start()
        self.procs.append(proc)
        if worker:
            self.wait_worker_started(proc)
        return proc

    def worker(self) -> AppProcess:
        """Start one `mini-fix worker` process and wait until it says it started."""
        proc = AppProcess(self.env(), self.tmp / f"worker-{len(self.procs)}.log", command="worker").start()
        self.procs.append(proc)
        self.wait_worker_started(proc)
        return proc

    @staticmethod
    def wait_worker_started(proc: AppProcess) -> None:
        """Block until the process logged `worker ready`: its warm-up imports done (or fail if it exited)."""

        def started() -> bool:
            if proc.proc is not None and proc.proc.poll() is not None:
                raise RuntimeError(f"{proc.command} exited with {proc.proc.returncode}:\n{proc.log()[-3000:]}")
            return bool(log_events(proc.log(), "worker ready"))

        wait_for(started, 120, "worker ready")

    def label(self, url: str, issue: int, repo: str = REPO) -> float:
        """Deliver a signed `issues.labeled`; the time (epoch seconds) just before sending."""
        sent = time.time()
        response = deliver(f"{url}/webhook", "issues", labeled(repo, issue, sender="alice"), SECRET)
        if response.status_code != 202:
            raise RuntimeError(f"webhook answered {response.status_code}: {response.text}")
        return sent

    def jobs(self) -> list[dict[str, Any]]:
        """`mini-fix jobs --json`, parsed."""
        cmd = [sys.executable, "-m", "bot.cli", "jobs", "--json", "--limit", "1000"]
        out = subprocess.run(cmd, env=self.procs[0].env, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"mini-fix jobs failed ({out.returncode}):\n{out.stderr[-3000:]}")
        return [json.loads(line) for line in out.stdout.splitlines()]

    def wait_succeeded(self, count: int, timeout: float) -> list[dict[str, Any]]:
        """Poll the ledger until `count` jobs succeeded; fail fast if one ended otherwise."""

        def done() -> list[dict[str, Any]]:
            rows = self.jobs()
            bad = [r for r in rows if r["status"] in ("failed", "denied", "cancelled")]
            if bad:
                raise RuntimeError(f"job(s) did not succeed: {bad}\n{self.logs()[-4000:]}")
            ok = [r for r in rows if r["status"] == "succeeded"]
            return ok if len(ok) >= count else []

        rows: list[dict[str, Any]] = wait_for(done, timeout, f"{count} succeeded jobs", interval=0.5)
        return rows

    def logs(self) -> str:
        """Every App process's log, concatenated."""
        return "".join(proc.log() for proc in self.procs)

    def finished_at(self) -> list[float]:
        """When each job finished, from the workers' JSON logs (`job finished`, status succeeded)."""
        return [e["at"] for e in log_events(self.logs(), "job finished") if e.get("status") == "succeeded"]

    def trajectories(self) -> list[dict[str, Any]]:
        """Every run's trajectory.json in the data dir."""
        return [json.loads(p.read_text()) for p in sorted(self.data.glob("runs/*/trajectory.json"))]
