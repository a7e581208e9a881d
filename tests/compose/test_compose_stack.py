"""deploy/ brought up for real: `docker compose up` of the one-host file and of the scale-out files.

The App's image and a PostgreSQL image (Debian's packages) are built offline; the stack joins a network made by the
test, and a fake GitHub (REST + git smart HTTP) and a scripted model server listen on that network's gateway address
on the host. Workers run their sandboxes on the same engine through the mounted socket. Only vLLM (a GPU) is left out.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_github_flow import FILES, FIX, REPO, SECRET
from tests.support import compose_stack as cs
from tests.support.compose_stack import ComposeStack, Network, docker, wait_for
from tests.support.fake_github import FakeGitHub, throwaway_key
from tests.support.model_server import ScriptedModelServer
from tests.support.webhooks import deliver, labeled

pytestmark = [pytest.mark.docker, pytest.mark.compose]
HERE = Path(__file__).parent
DEPLOY = cs.ROOT / "deploy"
LINK = re.compile(r"http://mini-fix\.test(/runs/[A-Za-z0-9_-]+\?[A-Za-z0-9=&]+)")  # signed: exp=…&sig=…


class Hold:
    """The first scripted step, which can be armed to hold one run there until released (to kill its worker)."""

    def __init__(self) -> None:
        self.armed = False
        self.reached = threading.Event()
        self.released = threading.Event()
        self._lock = threading.Lock()

    def reply(self, _messages: list[dict[str, Any]]) -> str:
        with self._lock:
            hold, self.armed = self.armed, False
        if hold:
            self.reached.set()
            self.released.wait(180)
        return FIX[0]  # type: ignore[return-value]


@pytest.fixture(scope="module")
def images() -> Iterator[tuple[str, str]]:
    """The App's image (a tag of this session's own: other checkouts build on this engine too) and PostgreSQL's."""
    if os.environ.get("MINIFIX_SKIP_DOCKER") == "1":
        pytest.skip("MINIFIX_SKIP_DOCKER=1: Docker tests skipped on purpose")
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        cs.unavailable("no Docker engine answers: run scripts/ensure-docker.sh (as root)")
    cs.compose_binary()
    yield cs.app_image(), cs.build("build-postgres-image.sh")


@pytest.fixture
def network() -> Iterator[Network]:
    net = Network()
    yield net
    net.remove()


@pytest.fixture
def github(network: Network) -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start(network.gateway)
    fake.add_repo("acme", "calc", FILES)
    fake.set_permission("alice", "write")
    yield fake
    fake.stop()


@pytest.fixture
def hold() -> Hold:
    return Hold()


@pytest.fixture
def model(network: Network, hold: Hold) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([hold.reply, *FIX[1:]], by_turn=True, host=network.gateway) as server:
        yield server
    hold.released.set()


@pytest.fixture
def fresh_images() -> Iterator[dict[str, str]]:
    """Sandbox and base image names no engine has yet (the App must make them), removed afterwards."""
    tag = uuid.uuid4().hex[:10]
    names = {
        "MINIFIX_SANDBOX_IMAGE": f"mini-fix-sandbox:compose-{tag}",
        "MINIFIX_SANDBOX_BASE_IMAGE": f"mini-fix-base:compose-{tag}",
    }
    yield names
    docker("rmi", "-f", *names.values(), check=False)


def stack_env(
    tmp_path: Path,
    images: tuple[str, str],
    network: Network,
    github: FakeGitHub,
    model: ScriptedModelServer,
    app_env: dict[str, str],
) -> dict[str, str]:
    """deploy/.env (with `app_env`) and the interpolation variables an operator would set, pointed at the fakes."""
    key = tmp_path / "github-app.private-key.pem"
    key.write_text(throwaway_key())
    key.chmod(0o600)
    os.chown(key, 10001, 10001)  # the image's user reads the mounted secret
    # The App builds its missing sandbox image itself; the slim profile keeps that build to seconds here (the polyglot
    # one, ~10 minutes of Debian packages, is built once by scripts/ensure-docker.sh and tested by the other tiers).
    env = {
        "MINIFIX_APP_ID": str(github.app_id),
        "MINIFIX_WEBHOOK_SECRET": SECRET,
        "MINIFIX_SANDBOX_PROFILE": "slim",
        **app_env,
    }
    (tmp_path / ".env").write_text("".join(f"{name}={value}\n" for name, value in env.items()))
    return {
        "MINIFIX_IMAGE": images[0],
        "POSTGRES_IMAGE": images[1],
        "POSTGRES_PASSWORD": "compose-test-pw",
        "MINIFIX_PRIVATE_KEY_FILE": str(key),
        "DOCKER_GID": str(os.stat("/var/run/docker.sock").st_gid),
        "MINIFIX_TEST_NETWORK": network.name,
        "FAKE_GITHUB_URL": github.base_url,
        "MODEL_API_BASE": model.api_base,
        "MINIFIX_PORT": "127.0.0.1:0",
        "MINIFIX_WORKERS": "1",
    }


def healthy_url(stack: ComposeStack, container: str) -> str:
    url = stack.url(container)
    wait_for(lambda: httpx.get(f"{url}/healthz", timeout=2).status_code == 200, 120, f"{container} healthz", stack.logs)
    return url


def pr_for(github: FakeGitHub, issue: int) -> dict[str, Any] | None:
    return next((p for p in github.pulls if p["head"]["ref"] == f"mini-fix/issue-{issue}"), None)


def viewer_link(github: FakeGitHub, pr: dict[str, Any]) -> str:
    """The signed /runs/{id} path linked from the PR or its comments."""
    texts = [pr["body"], *(c["body"] for c in github.comments_on(REPO, pr["number"]))]
    found = [m.group(1) for text in texts for m in LINK.finditer(text)]
    assert found, f"no viewer link in PR #{pr['number']}: {texts}"
    return found[0]


def label(stack: ComposeStack, url: str, github: FakeGitHub, title: str) -> int:
    issue = github.add_issue(REPO, title, "add(2, 3) returns -1", author="alice")
    response = deliver(f"{url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
    assert response.status_code == 202, f"{response.text}\n{stack.logs()}"
    return issue


def our_sandboxes(job_ids: list[str]) -> list[str]:
    return [cid for job in job_ids for cid in docker("ps", "-aq", "--filter", f"label=mini-fix.job-id={job}").split()]


def test_one_host_compose_turns_a_labelled_issue_into_a_draft_pr(
    tmp_path: Path,
    images: tuple[str, str],
    network: Network,
    github: FakeGitHub,
    model: ScriptedModelServer,
    fresh_images: dict[str, str],
) -> None:
    # An engine with neither the sandbox image nor its base (a new host, a DinD sidecar): the App imports the base
    # carried in its own image, builds the sandbox image on it, and says ready only then.
    stack = ComposeStack(
        [DEPLOY / "compose.yml", HERE / "compose.test.yml"],
        tmp_path,
        stack_env(tmp_path, images, network, github, model, fresh_images),
    )
    try:
        stack.up("app")
        url = healthy_url(stack, stack.containers("app")[0])
        wait_for(lambda: httpx.get(f"{url}/readyz", timeout=5).status_code == 200, 400, "app ready", stack.logs)
        sandbox_image = docker("image", "inspect", "-f", "{{.Id}}", fresh_images["MINIFIX_SANDBOX_IMAGE"]).strip()
        issue = label(stack, url, github, "add() subtracts")
        pr = wait_for(lambda: pr_for(github, issue), 240, "a pull request", stack.logs)
        page = httpx.get(url + viewer_link(github, pr), timeout=10)
        jobs = wait_for(
            lambda: [j for j in stack.exec_json("app", "mini-fix", "jobs", "--json") if j["status"] == "succeeded"],
            60,
            "the job done",
            stack.logs,
        )
    finally:
        stack.down()
    assert sandbox_image.startswith("sha256:")
    assert pr["draft"] is True and "return a + b" in github.show(REPO, f"mini-fix/issue-{issue}", "calc.py")
    assert page.status_code == 200 and "add() subtracts" in page.text
    assert len(jobs) == 1 and not our_sandboxes([jobs[0]["id"]])


def test_scale_out_two_apis_two_workers_postgres_and_a_killed_worker(
    tmp_path: Path,
    images: tuple[str, str],
    network: Network,
    github: FakeGitHub,
    model: ScriptedModelServer,
    hold: Hold,
    fresh_images: dict[str, str],
) -> None:
    files = [DEPLOY / "compose.yml", DEPLOY / "compose.scale.yml", HERE / "compose.scale.test.yml"]
    # A sandbox image no engine has: both workers build it (on the base already here) before they take jobs.
    app_env = {"MINIFIX_SANDBOX_IMAGE": fresh_images["MINIFIX_SANDBOX_IMAGE"]}
    stack = ComposeStack(files, tmp_path, stack_env(tmp_path, images, network, github, model, app_env))
    try:
        stack.up("postgres")
        wait_for(lambda: stack.healthy(stack.containers("postgres")[0]), 120, "postgres healthy", stack.logs)
        stack.up("api", "worker", scale={"api": 2, "worker": 2})
        apis = [healthy_url(stack, cid) for cid in stack.containers("api")]
        workers = stack.containers("worker")
        issues = [label(stack, url, github, f"add() subtracts (via replica {n})") for n, url in enumerate(apis, 1)]
        prs = [wait_for(lambda i=i: pr_for(github, i), 300, f"the PR for #{i}", stack.logs) for i in issues]
        pages = [httpx.get(url + viewer_link(github, pr), timeout=10) for pr in prs for url in apis]

        hold.armed = True  # the next run stops at its first model call; its worker is killed there
        killed_issue = label(stack, apis[0], github, "add() subtracts (worker killed)")
        assert hold.reached.wait(120), stack.logs()
        victim = next(cid for cid in workers if stack.ip(cid) == model.peers[-1])
        docker("kill", victim)
        hold.released.set()
        killed_pr = wait_for(lambda: pr_for(github, killed_issue), 300, "the PR after the kill", stack.logs)
        jobs = wait_for(
            lambda: (
                (rows := stack.exec_json("api", "mini-fix", "jobs", "--json"))
                and all(j["status"] == "succeeded" for j in rows)
                and rows
            ),
            120,
            "all jobs done",
            stack.logs,
        )
    finally:
        stack.down()
    assert len(apis) == 2 and len(workers) == 2
    assert [p["draft"] for p in prs] == [True, True] and killed_pr["draft"] is True
    assert len(github.pulls) == 3 and len(jobs) == 3
    assert {j["issue"]: j["attempts"] for j in jobs}[killed_issue] == 2
    assert not our_sandboxes([j["id"] for j in jobs])
    assert [p.status_code for p in pages] == [200] * 4, [p.text[:200] for p in pages]
