"""The trajectory viewer in real headless Chromium (Debian's `chromium`), served by uvicorn on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from pydantic import SecretStr

from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.signing import signed_run_url
from bot.web.app import create_app
from tests.support.trajectories import write_run

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
STEPS = [(f"grep -n 'def add' calc.py  # step {n}", f"calc.py:{n}: def add(a, b):\n", n % 3) for n in range(1, 12)]
STEPS.append(("python -m pytest -q", "<script>document.title='pwned'</script>\n3 passed in 0.1s\n", 0))
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]  # fmt: skip


@pytest.fixture(scope="module")
def chromium() -> Path:
    if os.environ.get("MINIFIX_SKIP_BROWSER") == "1":
        pytest.skip("MINIFIX_SKIP_BROWSER=1")
    assert CHROMIUM.exists(), "chromium is missing: run scripts/ensure-chromium.sh (or set MINIFIX_SKIP_BROWSER=1)"
    return CHROMIUM


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def served(settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> Iterator[Settings]:
    port = _free_port()
    public = settings.model_copy(
        update={"public_url": f"http://127.0.0.1:{port}", "operator_token": SecretStr("op-tok-1")}
    )
    write_run(public.data_dir, "brun1", STEPS)
    server = uvicorn.Server(
        uvicorn.Config(create_app(public, ledger=ledger, queue=job_queue), "127.0.0.1", port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        threading.Event().wait(0.02)
    yield public
    server.should_exit = True
    thread.join(10)


def browse(chromium: Path, tmp_path: Path, url: str, *extra: str) -> str:
    profile = tmp_path / "profile"
    cmd = [str(chromium), *FLAGS, f"--user-data-dir={profile}", *extra, url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_viewer_renders_every_step_in_chromium(chromium: Path, served: Settings, tmp_path: Path) -> None:
    url = signed_run_url(served, "brun1")
    assert url is not None
    dom = browse(chromium, tmp_path, url, "--dump-dom")
    for n in range(1, len(STEPS) + 1):
        assert f'id="step-{n}"' in dom
    assert "# step 11" in dom and "python -m pytest -q" in dom
    assert "<script>" not in dom and "pwned" in dom  # the output is shown as text, never run
    assert "<title>mini-fix run brun1</title>" in dom
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "viewer.png"
    shot.unlink(missing_ok=True)
    browse(chromium, tmp_path, url, f"--screenshot={shot}", "--window-size=1280,1800")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    shutil.copyfile(shot, "/tmp/viewer.png")


def test_an_unsigned_link_is_refused_in_chromium(chromium: Path, served: Settings, tmp_path: Path) -> None:
    dom = browse(chromium, tmp_path, f"{served.public_url}/runs/brun1", "--dump-dom")
    assert "not signed for this run" in dom and 'id="step-1"' not in dom
