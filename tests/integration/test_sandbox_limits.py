"""The limits hold (network, memory, processes, wall time) and containers never outlive their run."""

from __future__ import annotations

import ipaddress
import socket
import time
import uuid
from collections.abc import Callable, Iterator

import docker
import pytest

from sandbox.base import SandboxError
from sandbox.docker import DockerSandbox, remove_run_containers, sweep
from tests.integration.conftest import container_exists, small_config

pytestmark = pytest.mark.docker

CONNECT = "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3); print('connected')"


@pytest.fixture
def host_listener(docker_client: docker.DockerClient) -> Iterator[tuple[str, int]]:
    """A listening socket on this machine's Docker bridge address, which any bridged container can reach."""
    ipam = docker_client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    gateway = ipam.get("Gateway") or str(next(ipaddress.ip_network(ipam["Subnet"]).hosts()))
    with socket.socket() as server:
        server.bind((gateway, 0))
        server.listen()
        yield gateway, server.getsockname()[1]


def connect_from(sandbox: DockerSandbox, host: str, port: int) -> str:
    return sandbox.execute(f'python3 -c "{CONNECT}" {host} {port} 2>&1 | tail -1', timeout=10).output


def test_the_network_is_off(sandbox: DockerSandbox, host_listener: tuple[str, int]) -> None:
    interfaces = sandbox.execute("tail -n +3 /proc/net/dev | cut -d: -f1").output.split()
    assert interfaces == ["lo"]
    assert "connected" not in connect_from(sandbox, *host_listener)
    assert "unreachable" in connect_from(sandbox, *host_listener)
    resolve = sandbox.execute("python3 -c \"import socket; socket.getaddrinfo('example.com', 443)\"")
    assert resolve.returncode != 0
    assert "gaierror" in resolve.output


def test_a_setup_network_still_does_not_reach_the_host(
    start_sandbox: Callable[..., DockerSandbox], host_listener: tuple[str, int]
) -> None:
    sandbox = start_sandbox(network=True)
    assert "eth0" in sandbox.execute("cat /proc/net/dev").output  # on the proxy's network, yet
    assert "connected" not in connect_from(sandbox, *host_listener)


def test_a_memory_hog_is_killed_and_the_sandbox_still_answers(
    start_sandbox: Callable[..., DockerSandbox],
) -> None:
    sandbox = start_sandbox(memory="128m")
    result = sandbox.execute("python3 -c \"x = b'a' * (512 << 20); print('survived')\"")
    assert result.returncode == 137
    assert "survived" not in result.output
    assert sandbox.execute("echo alive").output == "alive\n"


def test_a_fork_bomb_stops_at_the_pids_limit(start_sandbox: Callable[..., DockerSandbox]) -> None:
    sandbox = start_sandbox(pids_limit=64)
    result = sandbox.execute("bomb() { bomb | bomb & }; bomb", timeout=3)
    assert result.returncode == -1
    assert sandbox.execute("echo alive").output == "alive\n"
    assert "bomb" not in sandbox.execute("ps -eo args").output


def test_close_removes_the_container_and_can_be_repeated(
    docker_client: docker.DockerClient, sandbox: DockerSandbox
) -> None:
    sandbox.close()
    sandbox.close()
    assert not container_exists(docker_client, sandbox.container_id)
    with pytest.raises(SandboxError, match="closed"):
        sandbox.execute("true")


def test_an_exception_inside_with_still_removes_the_container(docker_client: docker.DockerClient) -> None:
    with (
        pytest.raises(RuntimeError),
        DockerSandbox.start(small_config(), "test-with", client=docker_client) as sb,
    ):
        container_id = sb.container_id
        raise RuntimeError("the run failed")
    assert not container_exists(docker_client, container_id)


def test_at_the_deadline_the_container_stops_and_sweep_removes_it(
    docker_client: docker.DockerClient, start_sandbox: Callable[..., DockerSandbox]
) -> None:
    sandbox = start_sandbox(wall_time_seconds=1)
    time.sleep(1.5)
    with pytest.raises(SandboxError, match="wall-time limit of 1s"):
        sandbox.execute("true")
    assert not docker_client.api.inspect_container(sandbox.container_id)["State"]["Running"]
    assert sweep(docker_client) >= 1
    assert not container_exists(docker_client, sandbox.container_id)


def test_sweep_leaves_running_containers_alone(docker_client: docker.DockerClient, sandbox: DockerSandbox) -> None:
    sweep(docker_client)
    assert sandbox.execute("echo alive").output == "alive\n"


def test_remove_run_containers_finds_a_run_by_its_label(docker_client: docker.DockerClient) -> None:
    run_id = f"test-{uuid.uuid4().hex[:8]}"
    sandbox = DockerSandbox.start(small_config(), run_id, client=docker_client)
    assert remove_run_containers(run_id, docker_client) == 1
    assert not container_exists(docker_client, sandbox.container_id)
    sandbox.close()
