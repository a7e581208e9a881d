"""The image's HEALTHCHECK: probe the port of the role this container runs (serve: --port, worker: --metrics-port).

Run as `python3 -m bot.healthcheck [/healthz|/readyz]`; it reads the container's main command from /proc/1/cmdline,
so one image serves both roles. Exit 0 when the probe answers 200, 1 otherwise.
"""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

DEFAULT_PORTS = {"serve": 3000}  # `mini-fix serve`'s default --port; a worker has no port unless given one


def role_port(argv: list[str]) -> int | None:
    """The port the process with this command line answers HTTP on, or None (a worker without --metrics-port)."""
    role = next((arg for arg in argv if arg in ("serve", "worker")), None)
    flag = {"serve": "--port", "worker": "--metrics-port"}.get(role or "")
    for index, arg in enumerate(argv):
        if flag and arg == flag and index + 1 < len(argv):
            return int(argv[index + 1])
        if flag and arg.startswith(f"{flag}="):
            return int(arg.split("=", 1)[1])
    return DEFAULT_PORTS.get(role or "")


def main(args: list[str]) -> int:
    """Probe this container's role; 0 healthy, 1 not (or a worker with no port: nothing to probe, healthy)."""
    path = args[0] if args else "/healthz"
    argv = Path("/proc/1/cmdline").read_bytes().decode(errors="replace").split("\0")
    port = role_port(argv)
    if port is None:
        return 0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=4) as response:
            return 0 if response.status == 200 else 1
    except OSError as exc:
        print(f"healthcheck: {path} on port {port}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
