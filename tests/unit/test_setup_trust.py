"""Which jobs' setup may write the setup cache, through the whole pipeline: a job whose checkout is the default
branch's head (a fix, a `--fresh` retry) stores its setup's result; a retry or follow-up building on
mini-fix/issue-N (agent-written commits) runs setup, may restore an entry, and never stores one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import IO

from bot.jobs import JobDetails, JobKind, JobStatus
from bot.pipeline.attempts.setup_cache import SetupOptions
from bot.pipeline.attempts.setup_store import SetupStore
from bot.pipeline.deps import PipelineDeps
from sandbox.base import Sandbox, SandboxConfig
from tests.support.fake_github import FakeGitHub
from tests.support.fake_sandbox import FakeSandbox
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, SUBMIT, World, github

__all__ = ["github"]  # the fixture, shared with test_pipeline
REPO = "acme/cached"


class _Streaming(FakeSandbox):
    """A fake sandbox that can save and restore setup's result (what it streams is a stand-in, never a tar)."""

    restored = 0

    def image_id(self) -> str:
        return "sha256:" + "e" * 64

    def stream_out(self, command: str, out: IO[bytes], *, max_bytes: int, timeout: float) -> int:
        return out.write(b"setup's result")

    def stream_in(self, command: str, src: IO[bytes], *, timeout: float) -> None:
        assert src.read() == b"setup's result"
        _Streaming.restored += 1


class _CachedWorld(World):
    def __init__(self, github: FakeGitHub, tmp_path: Path, replies: list[object]) -> None:
        super().__init__(github, tmp_path, replies)
        self.store = SetupStore(tmp_path / "setup-cache", max_total=1 << 20)

    def sandbox(self, config: SandboxConfig, run_id: str) -> Sandbox:
        box = _Streaming(results=self.results)
        self.sandboxes.append(box)
        return box

    def deps(self) -> PipelineDeps:
        return replace(super().deps(), setup=SetupOptions(timeout=60, store=self.store))

    def entries(self) -> int:
        return len(list(self.store.root.glob("*/*.tar")))


def test_only_a_job_on_the_default_branchs_head_stores_its_setup(github: FakeGitHub, tmp_path: Path) -> None:
    files = {"calc.py": "def add(a, b):\n    return a - b\n", "requirements.txt": "six\n",
             ".github/mini-fix.yml": "setup:\n  - touch .ready\n"}  # fmt: skip
    github.add_repo("acme", "cached", files)
    pinned = bash("echo 'six==1.16' > requirements.txt")  # the PR branch's key differs from main's from now on
    world = _CachedWorld(github, tmp_path, [FIX, pinned, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT),
                                            bash("echo '# v3' >> calc.py"), bash(SUBMIT)])  # fmt: skip
    world.issue = github.add_issue(REPO, "add() subtracts", "", author="alice")

    assert world.run(repo=REPO).status == JobStatus.SUCCEEDED  # a fix, cloned from main
    assert world.entries() == 1

    retry = world.run(id="job2", repo=REPO, kind=JobKind.RETRY, guidance="again")  # on mini-fix/issue-N
    assert retry.status == JobStatus.SUCCEEDED, retry.error
    assert world.entries() == 1  # setup ran on the agent-written branch (a miss: its own key), and stored nothing
    assert all(".ready" in "".join(box.commands) for box in world.sandboxes)

    restored = _Streaming.restored
    fresh = world.run(id="job3", repo=REPO, kind=JobKind.RETRY, details=JobDetails(fresh=True))  # from main again
    assert fresh.status == JobStatus.SUCCEEDED, fresh.error
    assert world.entries() == 1 and _Streaming.restored > restored  # main's entry, restored
