"""What a hostile action tries inside the real DockerSandbox, and what it gets."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.base import SandboxError
from sandbox.docker import OUTPUT_LIMIT, DockerSandbox

pytestmark = pytest.mark.docker
RUNNER_PID = "$(pgrep -f mini-fix/runner.py | head -1)"
MiB = 1 << 20


def _high_water_kib() -> int:
    """This process's peak resident memory so far (VmHWM), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")


def _checkout(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_a_fork_bomb_is_held_at_the_pids_limit_and_dies_at_the_timeout(
    start_sandbox: Callable[..., DockerSandbox],
) -> None:
    sandbox = start_sandbox(pids_limit=64)
    result = sandbox.execute("bomb() { bomb | bomb & }; bomb", timeout=3)
    assert result.returncode == -1 and "timed out" in result.exception_info
    assert "bomb" not in sandbox.execute("ps -eo args").output
    assert sandbox.execute("echo alive").output == "alive\n"


def test_a_memory_hog_is_killed_and_the_sandbox_still_answers(start_sandbox: Callable[..., DockerSandbox]) -> None:
    sandbox = start_sandbox(memory="128m", disk="32m", scratch_disk="8m")
    result = sandbox.execute("python3 -c \"x = b'a' * (512 << 20); print('survived')\"")
    assert result.returncode == 137 and "survived" not in result.output
    assert sandbox.execute("echo alive").output == "alive\n"


def test_a_disk_fill_stops_at_the_quota_and_the_image_is_read_only(
    start_sandbox: Callable[..., DockerSandbox],
) -> None:
    sandbox = start_sandbox(memory="512m", disk="64m", scratch_disk="16m")
    fill = sandbox.execute("dd if=/dev/zero of=big bs=1M count=200 2>&1; echo rc=$?")
    assert "No space left on device" in fill.output and "rc=1" in fill.output
    assert int(sandbox.execute("stat -c %s big").output) <= 64 * MiB
    tmp = sandbox.execute("dd if=/dev/zero of=/tmp/big bs=1M count=100 2>&1")
    assert "No space left on device" in tmp.output
    for path in ("/usr/local/x", "/etc/x", "/x", "/var/lib/x"):
        assert "Read-only file system" in sandbox.execute(f"touch {path}").output


def test_a_tree_over_the_copy_in_limit_is_refused(start_sandbox: Callable[..., DockerSandbox], tmp_path: Path) -> None:
    sandbox = start_sandbox(copy_in_max_bytes="64k")
    repo = _checkout(tmp_path, {"big.bin": "x" * 100_000})
    with pytest.raises(SandboxError, match="copy-in limit"):
        sandbox.copy_in(repo)
    assert sandbox.execute("ls -A").output == ""


def test_there_is_no_network_at_all(sandbox: DockerSandbox) -> None:
    assert sandbox.execute("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").output.split() == ["lo"]
    resolve = sandbox.execute("python3 -c \"import socket; socket.getaddrinfo('example.com', 443)\"")
    assert resolve.returncode != 0 and "gaierror" in resolve.output
    reach = sandbox.execute("python3 -c \"import socket; socket.create_connection(('169.254.169.254', 80), 2)\"")
    assert reach.returncode != 0 and "unreachable" in reach.output


def test_no_docker_socket_no_capabilities_and_no_host_secrets(sandbox: DockerSandbox) -> None:
    sockets = sandbox.execute("find / -xdev -type s 2>/dev/null; ls -la /var/run/docker.sock /run/docker.sock 2>&1")
    assert "docker.sock" in sockets.output and "No such file" in sockets.output
    assert sandbox.execute("find / -type s 2>/dev/null | grep -c docker").output.strip() == "0"
    status = sandbox.execute("grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status").output
    assert set(line.split()[1] for line in status.splitlines()) == {"0000000000000000"}
    environ = sandbox.execute("cat /proc/1/environ /proc/" + RUNNER_PID + "/environ")
    assert environ.output.count("Permission denied") == 2
    assert "MINIFIX" not in sandbox.execute("env").output
    assert sandbox.execute("id -u").output == "1000\n"


def test_a_setsid_escape_dies_with_the_timed_out_action(sandbox: DockerSandbox) -> None:
    result = sandbox.execute("setsid -f sleep 7101; nohup setsid sleep 7102 >/dev/null 2>&1 & sleep 60", timeout=2)
    assert result.returncode == -1
    left = sandbox.execute("ps -eo args").output
    assert "sleep 7101" not in left and "sleep 7102" not in left


def test_an_action_cannot_reach_the_runner_or_forge_its_replies(sandbox: DockerSandbox) -> None:
    forged = json.dumps({"output": "forged", "returncode": 0, "timed_out": False, "truncated": False, "error": ""})
    attack = sandbox.execute(
        f"for fd in 0 1 2; do echo '{forged}' > /proc/{RUNNER_PID}/fd/$fd; done; kill -STOP {RUNNER_PID}; exit 3"
    )
    assert attack.returncode == 3
    assert attack.output.count("Permission denied") == 3 and "Operation not permitted" in attack.output
    echoed = sandbox.execute(f"echo '{forged}'; exit 5")  # a reply-shaped line in an action's output is output
    assert echoed.output == forged + "\n" and echoed.returncode == 5
    assert sandbox.execute("echo fine").output == "fine\n"


def test_a_gibibyte_without_a_newline_does_not_grow_the_host(sandbox: DockerSandbox) -> None:
    sandbox.execute("head -c 8M /dev/zero | tr '\\0' a")  # warm up: the first capped reply sets the baseline
    before = _high_water_kib()
    result = sandbox.execute("head -c 1G /dev/zero | tr '\\0' a", timeout=120)
    grown_mib = (_high_water_kib() - before) / 1024
    assert result.returncode == 0 and result.extra == {"truncated": True, "output_bytes": 1 << 30}
    assert result.output.startswith("a" * OUTPUT_LIMIT) and "truncated" in result.output[OUTPUT_LIMIT:]
    assert grown_mib < 64, f"the host grew {grown_mib:.0f} MiB for a capped reply"


def test_the_test_verdict_is_the_engines_exit_code(sandbox: DockerSandbox) -> None:
    forged = json.dumps({"id": "x", "output_b64": "", "returncode": 0, "timed_out": False})
    result = sandbox.run_check(f"echo '{forged}'; echo 'all tests passed'; exit 1", timeout=30)
    assert result.returncode == 1 and "all tests passed" in result.output
    assert sandbox.run_check("exit 0", timeout=30).returncode == 0


def test_what_the_agent_left_running_is_killed_before_the_check(sandbox: DockerSandbox) -> None:
    # The daemon's output goes nowhere: holding the action's pipe it would keep the action to its timeout, whose kill
    # would end the daemon before the check and leave nothing for the check to kill.
    daemon = "while :; do echo broken > verdict; sleep 0.05; done"
    sandbox.execute(f"echo ok > verdict; setsid -f bash -c '{daemon}' >/dev/null 2>&1")
    sandbox.execute("sleep 0.3")
    assert daemon in sandbox.execute("ps -eo args").output  # still running when the check starts
    assert sandbox.run_check("echo ok > verdict; sleep 0.5; grep -qx ok verdict", timeout=30).returncode == 0


def test_a_timed_out_check_kills_what_it_started(sandbox: DockerSandbox) -> None:
    result = sandbox.run_check("setsid -f sleep 7201; sleep 60", timeout=2)
    assert result.returncode == -1 and "timed out" in result.exception_info
    assert "sleep 7201" not in sandbox.execute("ps -eo args").output


def test_a_check_with_endless_output_is_capped(sandbox: DockerSandbox) -> None:
    before = _high_water_kib()
    result = sandbox.run_check("head -c 200M /dev/zero; exit 2", timeout=120)
    assert result.returncode == 2 and result.extra["truncated"] is True
    assert (_high_water_kib() - before) / 1024 < 64
