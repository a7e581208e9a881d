"""Files in and out of the sandbox, setup errors, and the slower path for images without python3."""

from __future__ import annotations

import hashlib
import io
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from sandbox.base import EngineUnavailable, ImageMissing
from sandbox.docker import DockerSandbox
from sandbox.engine import connect
from tests.integration.conftest import IMAGE, small_config

pytestmark = pytest.mark.docker

NO_PYTHON_IMAGE = "mini-fix-sandbox-nopython:test"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A small committed repository that ignores *.log."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def answer():\n    return 41\n")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start")
    return repo


def tree_hash(root: Path) -> str:
    """Paths, modes and contents of everything under `root`, .git included."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(f"{path.relative_to(root)}:{path.stat().st_mode}".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_copied_files_belong_to_the_sandbox_user_and_the_checkout_is_untouched(
    sandbox: DockerSandbox, checkout: Path
) -> None:
    before = tree_hash(checkout)
    sandbox.copy_in(checkout)
    assert sandbox.execute("find . ! -user 1000 -o ! -group 1000 | head").output == ""
    assert sandbox.execute("git status --porcelain && cat app.py").output == "def answer():\n    return 41\n"
    sandbox.execute("echo changed > app.py && touch new.txt")
    sandbox.diff()
    assert tree_hash(checkout) == before


def test_the_diff_has_new_and_changed_files_but_not_ignored_ones(
    sandbox: DockerSandbox, checkout: Path, tmp_path: Path
) -> None:
    sandbox.copy_in(checkout)
    edit = "sed -i s/41/42/ app.py && printf 'notes\\n' > NOTES.md && printf '\\0\\1\\2' > blob.bin && echo x > run.log"
    assert sandbox.execute(edit).returncode == 0
    sandbox.execute("git add -A && git commit -qm 'the agent committed some of it' && echo more >> NOTES.md")
    patch = sandbox.diff()
    assert "+    return 42" in patch
    assert "new file mode" in patch and "NOTES.md" in patch
    assert "GIT binary patch" in patch
    assert "run.log" not in patch
    copy = tmp_path / "copy"
    subprocess.run(["git", "clone", "-q", str(checkout), str(copy)], check=True)
    (tmp_path / "patch.diff").write_text(patch)
    git(copy, "apply", "--binary", str(tmp_path / "patch.diff"))
    assert (copy / "NOTES.md").read_text() == "notes\nmore\n"
    assert (copy / "blob.bin").read_bytes() == b"\0\1\2"


def test_copying_into_a_directory_the_image_lacks_makes_it_the_users(
    start_sandbox: Callable[..., DockerSandbox], checkout: Path
) -> None:
    sandbox = start_sandbox(cwd="/work/project")
    sandbox.copy_in(checkout)
    assert sandbox.execute("stat -c %u:%g . && touch made-by-agent").output == "1000:1000\n"


def test_a_missing_image_says_how_to_build_it(docker_client: docker.DockerClient) -> None:
    with pytest.raises(ImageMissing, match=r"ensure-docker\.sh"):
        DockerSandbox.start(small_config(image="mini-fix-no-such-image:nope"), "test-missing", client=docker_client)


def test_no_engine_says_where_it_looked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/docker.sock")
    with pytest.raises(EngineUnavailable, match="start dockerd or set DOCKER_HOST"):
        connect()


@pytest.fixture(scope="module")
def image_without_python(docker_client: docker.DockerClient) -> Iterator[str]:
    """The sandbox image with python3 removed, built locally from it (no network)."""
    dockerfile = f"FROM {IMAGE}\nUSER root\nRUN rm -f /usr/bin/python3*\nUSER agent\n"
    docker_client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=NO_PYTHON_IMAGE, rm=True)
    yield NO_PYTHON_IMAGE
    docker_client.images.remove(NO_PYTHON_IMAGE, force=True)


def test_without_python3_actions_fall_back_to_exec_with_the_same_behaviour(
    start_sandbox: Callable[..., DockerSandbox], image_without_python: str
) -> None:
    sandbox = start_sandbox(image=image_without_python, env={"GREETING": "hi"})
    result = sandbox.execute('cd /tmp; echo "$GREETING"; echo err >&2; exit 2')
    assert (result.output, result.returncode) == ("hi\nerr\n", 2)
    assert sandbox.execute("pwd").output == "/testbed\n"
    timed_out = sandbox.execute("echo before; sleep 7401 & sleep 7402", timeout=1)
    assert (timed_out.returncode, timed_out.output) == (-1, "before\n")
    assert "timed out after 1 seconds" in timed_out.exception_info
    assert "sleep 74" not in sandbox.execute("ps -eo args").output
