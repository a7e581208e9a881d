"""scripts/ensure-model.sh `running` decides from the server's PID file, not an HTTP call: a llama.cpp server busy
generating for another process may not answer in time, and taking it for "not running" would stop it under that
process (the demo and the realmodel tier stop only a server they started)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure-model.sh"


def _script(action: str, cache: Path) -> int:
    env = {**os.environ, "MINIFIX_CACHE_DIR": str(cache), "MINIFIX_REAL_MODEL_PORT": "9"}  # nothing answers on 9
    return subprocess.run([str(SCRIPT), action], env=env, capture_output=True, timeout=60).returncode


def test_a_server_that_does_not_answer_is_still_running(tmp_path: Path) -> None:
    # A process whose command line is our server's, answering nothing over HTTP: a busy server, as the script sees it.
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-m", "llama_cpp.server"])
    try:
        (tmp_path / "run").mkdir()
        (tmp_path / "run" / "llama-9.pid").write_text(str(busy.pid))
        assert _script("running", tmp_path) == 0
        assert _script("status", tmp_path) == 1  # the HTTP check would have called it down
    finally:
        busy.kill()
        busy.wait()
    assert _script("running", tmp_path) == 1  # its PID is gone (or reused by another program): not running


def test_no_pid_file_is_not_running(tmp_path: Path) -> None:
    assert _script("running", tmp_path) == 1
