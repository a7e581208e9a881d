"""`mini-fix serve --no-worker` loads neither litellm nor the docker SDK (together seconds of start-up and ~150 MB)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from bot.web.app import create_app
from bot.settings import Settings
app = create_app(Settings(webhook_secret="footprint-secret-123", data_dir=sys.argv[1], _env_file=None))
print(sorted(m for m in ("litellm", "docker", "openai") if m in sys.modules))
"""


def test_the_api_server_imports_neither_litellm_nor_docker(tmp_path: object) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
