"""Taking a tree of many small files out of the real sandbox: export-then-refuse (before) against the export's
own entry cap (after), side by side on one container.

A small git checkout is copied into a DockerSandbox (mini-fix-sandbox:slim by default); the "agent" adds --files
1-byte files under junk/. Each way calls `take_change` as the pipeline does (the operator's default caps:
10,000 changed files, 64 MiB, a 1 GiB export) and is refused with the `limits` outcome; the figures are its wall
time, the files and disk blocks it left on the worker (the export directory, before cleanup) and the process's
peak RSS growth. "before" is the code before issue 32 #8: the export capped by bytes only (`export_cap` replaced
by the plain byte cap), the change caps refusing once every file is on disk.

    .venv/bin/python bench/export_cap.py [--files 200000] [--image mini-fix-sandbox:slim]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.pipeline.attempts import execute  # noqa: E402
from bot.pipeline.change import ChangeCaps  # noqa: E402
from bot.pipeline.errors import RunFailed  # noqa: E402
from sandbox.base import SandboxConfig  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402


def checkout(where: Path) -> Path:
    """A small repository: 20 modules in 4 packages, one commit."""
    repo = where / "repo"
    for pkg in range(4):
        (repo / f"pkg{pkg}").mkdir(parents=True)
        for mod in range(5):
            (repo / f"pkg{pkg}" / f"m{mod}.py").write_text(f"X = {mod}\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    return repo


def left(dest: Path) -> tuple[int, int]:
    """Entries and disk bytes (allocated blocks) under `dest`."""
    entries = blocks = 0
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            entries += 1
            blocks += os.lstat(os.path.join(root, name)).st_blocks
    return entries, blocks * 512


def one(way: str, sandbox: DockerSandbox, repo: Path, work: Path) -> dict[str, Any]:
    dest = work / f"export-{way}"
    real = execute.export_cap
    if way == "before":
        execute.export_cap = lambda checkout, max_bytes, caps, exclude="": max_bytes  # type: ignore[assignment]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began = time.perf_counter()
    try:
        execute.take_change(sandbox, repo, dest, max_bytes=1 << 30, caps=ChangeCaps())
        outcome, detail = "taken", ""
    except RunFailed as exc:
        outcome, detail = str(exc.outcome), exc.detail
    finally:
        execute.export_cap = real  # type: ignore[assignment]
    seconds = time.perf_counter() - began
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    entries, disk = left(dest)
    shutil.rmtree(dest, ignore_errors=True)
    return {"seconds": seconds, "entries": entries, "disk_mib": disk / (1 << 20), "rss_grew_mib": grown,
            "outcome": outcome, "detail": detail[:90]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--image", default="mini-fix-sandbox:slim")
    args = parser.parse_args()
    config = SandboxConfig(image=args.image, memory="1g", timeout=600, wall_time_seconds=3600, pids_limit=256)
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        work = Path(tmp)
        repo = checkout(work)
        sandbox = DockerSandbox.start(config, "bench-export")
        try:
            sandbox.copy_in(repo)
            write = f"import os; os.mkdir('junk'); [open(f'junk/f{{i}}', 'w').write('x') for i in range({args.files})]"
            made = sandbox.execute(f'python3 -c "{write}" && ls junk | wc -l', timeout=600)
            print(f"tree: 20 tracked files + {made.output.strip()} new 1-byte files under junk/ ({args.image})")
            heads = f"{'seconds':>8} {'entries on worker':>18} {'worker disk MiB':>16} {'RSS grew MiB':>13}"
            print(f"{'way':<7} {heads}  outcome")
            for way in ("before", "after"):
                r = one(way, sandbox, repo, work)
                print(f"{way:<7} {r['seconds']:>8.1f} {r['entries']:>18,} {r['disk_mib']:>16.1f} "
                      f"{r['rss_grew_mib']:>13.0f}  {r['outcome']}: {r['detail']}")  # fmt: skip
        finally:
            sandbox.close()


if __name__ == "__main__":
    main()
