"""Actions in the real sandbox: stateless, combined output, timeouts killed inside, runner failure seen."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sandbox.base import SandboxError
from sandbox.docker import OUTPUT_LIMIT, DockerSandbox

pytestmark = pytest.mark.docker


def test_each_action_starts_fresh_in_the_working_directory(sandbox: DockerSandbox) -> None:
    assert sandbox.execute("cd /tmp && export LEFT_OVER=1 && pwd").output == "/tmp\n"
    result = sandbox.execute('pwd; echo "${LEFT_OVER:-unset}"')
    assert result.output == "/testbed\nunset\n"
    assert sandbox.execute("pwd", cwd="/tmp").output == "/tmp\n"


def test_stdout_and_stderr_are_combined_and_the_return_code_kept(sandbox: DockerSandbox) -> None:
    result = sandbox.execute("echo out; echo err >&2; echo out again; exit 3")
    assert result.output == "out\nerr\nout again\n"
    assert (result.returncode, result.exception_info) == (3, "")


def test_actions_run_as_the_non_root_user_with_the_configured_env(
    start_sandbox: Callable[..., DockerSandbox],
) -> None:
    sandbox = start_sandbox(env={"GREETING": "hello"})
    assert sandbox.execute('id -u; echo "$GREETING"').output == "1000\nhello\n"


def test_a_timeout_kills_every_process_the_command_started(sandbox: DockerSandbox) -> None:
    command = "echo before; sleep 7301 & (sleep 7302 &); sleep 7303; echo after"
    result = sandbox.execute(command, timeout=1)
    assert result.returncode == -1
    assert result.output == "before\n"
    assert "timed out after 1 seconds" in result.exception_info
    assert command in result.exception_info
    leftovers = sandbox.execute("ps -eo args").output
    assert "sleep 73" not in leftovers
    assert sandbox.execute("echo still here").output == "still here\n"


def test_a_command_that_closes_its_output_but_keeps_running_still_times_out(sandbox: DockerSandbox) -> None:
    result = sandbox.execute("exec >/dev/null 2>&1; sleep 7304", timeout=1)
    assert result.returncode == -1
    assert "sleep 7304" not in sandbox.execute("ps -eo args").output


def test_output_past_the_limit_is_cut_and_flagged(sandbox: DockerSandbox) -> None:
    result = sandbox.execute(f"head -c {OUTPUT_LIMIT + 1000} /dev/zero | tr '\\0' a; echo; exit 4")
    kept, marker = result.output[:OUTPUT_LIMIT], result.output[OUTPUT_LIMIT:]
    assert set(kept) == {"a"}
    assert marker == f"\n[mini-fix: output truncated: kept the first {OUTPUT_LIMIT} of {OUTPUT_LIMIT + 1001} bytes]"
    assert result.extra == {"truncated": True, "output_bytes": OUTPUT_LIMIT + 1001}
    assert result.returncode == 4


def test_bytes_that_are_not_utf8_do_not_break_the_output(sandbox: DockerSandbox) -> None:
    result = sandbox.execute(r"printf 'ok \xff\xfe end\n'")
    assert result.output == "ok \ufffd\ufffd end\n"


def test_a_command_that_cannot_start_is_reported_and_the_sandbox_goes_on(sandbox: DockerSandbox) -> None:
    missing_cwd = sandbox.execute("true", cwd="/no/such/dir")
    assert missing_cwd.returncode == -1
    assert "/no/such/dir" in missing_cwd.exception_info
    assert sandbox.execute("echo a\0b").returncode == -1
    result = sandbox.execute('echo "$HOME"; echo "$PAGER"')
    assert result.output == "/home/agent\ncat\n"


def test_home_and_the_scratch_dirs_are_writable_by_the_action_user(sandbox: DockerSandbox) -> None:
    # runc gives a tmpfs the mode of the image's directory (0755 for /home/agent): the owner must be the user.
    result = sandbox.execute('mkdir -p "$HOME/.cache/go-build" /tmp/x /var/tmp/y && stat -c "%U" "$HOME" /tmp')
    assert result.returncode == 0, result.output
    assert result.output == "agent\nagent\n"


def test_an_action_cannot_kill_the_runner(sandbox: DockerSandbox) -> None:
    result = sandbox.execute("kill -9 $PPID")
    assert result.returncode == 1 and "Operation not permitted" in result.output
    assert sandbox.execute("echo alive").output == "alive\n"


def test_a_dead_runner_is_an_error_not_a_hang(sandbox: DockerSandbox) -> None:
    assert sandbox.execute("true").returncode == 0  # the runner is up (it starts while `start` returns)
    api = sandbox.client.api
    killer = api.exec_create(sandbox.container_id, ["pkill", "-9", "-f", "mini-fix/runner"], user="0:0")["Id"]
    api.exec_start(killer)
    with pytest.raises(SandboxError, match="runner stopped"):
        sandbox.execute("sleep 5")


def test_template_vars_describe_the_sandbox(sandbox: DockerSandbox) -> None:
    variables = sandbox.template_vars()
    assert variables["system"] == "Linux"
    assert variables["machine"]
    assert variables["release"]
    assert variables["version"]
    assert variables["cwd"] == "/testbed"
