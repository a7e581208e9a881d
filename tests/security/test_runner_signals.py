"""The root runner cannot be signalled by the action's uid, not even while it kills that uid's processes."""

from __future__ import annotations

import pytest

from sandbox import runner
from sandbox.docker import DockerSandbox

ACTION_UID = 1000
# Every root process but pid 1 (the runner among them, found while it is still all root), then many loops that
# SIGKILL them without pause, each ending at the action's timeout, when the runner runs kill_uid.
SPIN = (
    'R=$(for s in /proc/[0-9]*/status; do awk -v f="$s" \'/^Uid:/ && $2 == 0 {print f}\' "$s"; done'
    " | sed 's|/proc/||; s|/status||' | grep -vx 1); "
    "for n in $(seq 20); do (while :; do kill -9 $R 2>/dev/null; done) & done; sleep 60"
)


def _may_signal(sender: tuple[int, int, int], target: tuple[int, int, int]) -> bool:
    """kill(2) for an unprivileged sender: its real or effective uid equals the target's real or saved uid."""
    (s_real, s_eff, _), (t_real, _, t_saved) = sender, target
    return bool({s_real, s_eff} & {t_real, t_saved})


def test_during_kill_uid_no_uid_of_the_runner_lets_the_action_signal_it(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [0, 0, 0]
    seen: list[tuple[int, int, int]] = []

    def setresuid(real: int, effective: int, saved: int) -> None:
        ids[:] = [real, effective, saved]

    def kill(pid: int, sig: int) -> None:
        assert pid == -1
        seen.append((ids[0], ids[1], ids[2]))

    monkeypatch.setattr(runner.os, "setresuid", setresuid)
    monkeypatch.setattr(runner.os, "kill", kill)
    monkeypatch.setattr(runner, "live_processes", lambda uid, me: [])
    runner.kill_uid(ACTION_UID)
    action = (ACTION_UID, ACTION_UID, ACTION_UID)
    assert seen and all(not _may_signal(action, during) for during in seen)
    assert all(during[1] == ACTION_UID for during in seen)  # kill(-1) still reaches the action's processes
    assert ids == [0, 0, 0]
    assert _may_signal(action, (ACTION_UID, ACTION_UID, 0))  # the ids it used to take: signalable


@pytest.mark.docker
def test_an_action_spinning_kill_on_the_runner_through_timeouts_leaves_it_running(sandbox: DockerSandbox) -> None:
    for _ in range(5):
        result = sandbox.execute(SPIN, timeout=2)
        assert result.exception_info and "runner" not in result.exception_info  # timed out, the runner answered
        assert sandbox.execute("echo alive", timeout=10).output == "alive\n"
