"""sandbox/build-base-image.sh with stand-ins for debootstrap and docker: which Debian suite it bootstraps (the
default trixie, a mini-fix-base:<suite> name's own, MINIFIX_BASE_SUITE, an argument), sid's script for a suite
debootstrap does not know, and --if-missing leaving a present image alone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "sandbox" / "build-base-image.sh"
DEBOOTSTRAP = """#!/bin/sh
echo "debootstrap $*" >>"$RECORD"
[ -z "${DEBOOTSTRAP_SECONDS:-}" ] || command sleep "$DEBOOTSTRAP_SECONDS"
for arg; do if [ -d "$arg" ]; then mkdir -p "$arg/etc"; echo x >"$arg/etc/marker"; fi; done
"""
DOCKER = """#!/bin/sh
case "$1" in
    image) exit "$INSPECT_RC" ;;
    import) cat >/dev/null; echo "docker $*" >>"$RECORD" ;;
esac
"""


def _run(tmp_path: Path, *args: str, present: bool = False, suites: tuple[str, ...] = ("bookworm", "trixie", "sid"),
         **env: str) -> list[str]:  # fmt: skip
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in {"debootstrap": DEBOOTSTRAP, "docker": DOCKER}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    for suite in suites:
        (scripts / suite).write_text("")
    record = tmp_path / "record"
    record.write_text("")
    full_env = {k: v for k, v in os.environ.items() if k != "MINIFIX_BASE_SUITE"}
    full_env |= {"PATH": f"{bin_dir}:{os.environ['PATH']}", "RECORD": str(record), "DEBOOTSTRAP_SCRIPTS": str(scripts),
                 "INSPECT_RC": "0" if present else "1", "TMPDIR": str(tmp_path), **env}  # fmt: skip
    subprocess.run(["bash", str(SCRIPT), *args], env=full_env, check=True, capture_output=True, text=True)
    return record.read_text().splitlines()


def _suite(line: str) -> str:
    return [word for word in line.split() if not word.startswith("-")][1]


@pytest.mark.parametrize(
    ("args", "env", "suite", "name"),
    [
        ((), {}, "trixie", "mini-fix-base:trixie"),
        (("mini-fix-base:bookworm",), {}, "bookworm", "mini-fix-base:bookworm"),
        (("mini-fix-base:dev",), {}, "trixie", "mini-fix-base:dev"),
        (("mini-fix-base:dev",), {"MINIFIX_BASE_SUITE": "bookworm"}, "bookworm", "mini-fix-base:dev"),
        (("localhost:5000/base", "sid"), {}, "sid", "localhost:5000/base"),
    ],
)
def test_the_suite_comes_from_the_argument_the_variable_or_the_name(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], suite: str, name: str
) -> None:
    debootstrap, imported = _run(tmp_path, *args, **env)
    assert _suite(debootstrap) == suite
    assert not debootstrap.endswith("/sid")  # debootstrap knows the suite: no stand-in script
    assert imported.startswith("docker import") and imported.endswith(f"- {name}")


def test_a_suite_debootstrap_does_not_know_uses_sids_script(tmp_path: Path) -> None:
    debootstrap, _ = _run(tmp_path, "mini-fix-base:trixie", suites=("bookworm", "sid"))
    assert _suite(debootstrap) == "trixie" and debootstrap.endswith(f"{tmp_path}/scripts/sid")


def test_if_missing_leaves_a_present_image_alone_and_builds_a_missing_one(tmp_path: Path) -> None:
    assert _run(tmp_path, "--if-missing", "mini-fix-base:bookworm", present=True) == []
    debootstrap, imported = _run(tmp_path, "--if-missing", "mini-fix-base:bookworm")
    assert _suite(debootstrap) == "bookworm" and imported.endswith("- mini-fix-base:bookworm")


def test_a_quick_debootstrap_is_not_held_for_a_whole_poll(tmp_path: Path) -> None:
    # `sleep` as an exported bash function: it records how long each poll would wait.
    record_sleep = '() { echo "$1" >>"$TMPDIR/sleeps"; command sleep "$1"; }'
    # A debootstrap of 0.3 s: still running at the script's first look.
    debootstrap, _ = _run(tmp_path, DEBOOTSTRAP_SECONDS="0.3", **{"BASH_FUNC_sleep%%": record_sleep})
    assert _suite(debootstrap) == "trixie"
    sleeps = (tmp_path / "sleeps").read_text().split()
    assert sleeps and float(sleeps[0]) < 1  # the first look comes early; later ones back off to a second
