"""The setup phase's network: only the proxy, which lets through only allowed names on public addresses."""

from __future__ import annotations

import ipaddress
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import docker
import pytest

from sandbox.docker import DockerSandbox
from sandbox.setup_proxy import DENIED_NETWORKS
from tests.integration.conftest import IMAGE

pytestmark = pytest.mark.docker
TEST_LABEL = "mini-fix.test-setup-proxy"
PUBLIC_SUBNET = "198.51.100.0/24"  # TEST-NET-2: not a private range, so the proxy may reach it
PRIVATE_SUBNET = "10.213.0.0/24"
SERVE = "mkdir -p /srv && echo served-by-$0 > /srv/index.html && exec python3 -m http.server 80 -d /srv"
# Prints the body of a 200, else the status code (urllib follows http_proxy like pip and apt do).
FETCH = (
    "python3 -c 'import sys, urllib.error, urllib.request as r\n"
    'try: print(r.urlopen(sys.argv[1], timeout=5).read().decode(), end="")\n'
    'except urllib.error.HTTPError as e: print(e.code, end="")\' '
)
CONNECT = (
    "python3 -c 'import socket, sys\n"
    'try: socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3); print("connected")\n'
    "except OSError as e: print(type(e).__name__, e)' "
)
GATEWAY = (
    "python3 -c 'import socket, struct\n"
    'for line in open("/proc/net/route").readlines()[1:]:\n'
    "    f = line.split()\n"
    '    if f[1] == "00000000": print(socket.inet_ntoa(struct.pack("<L", int(f[2], 16))))\''
)
DIRECT = (
    "python3 -c 'import sys, urllib.request as r\n"
    "opener = r.build_opener(r.ProxyHandler({}))\n"
    "print(opener.open(sys.argv[1], timeout=3).read().decode())' "
)


@dataclass
class World:
    """An upstream network with an allowed web server, a private one with another, and the names."""

    upstream: str
    private: str
    gateway: str


def _server(client: docker.DockerClient, network: str, alias: str, subnet_ip: str, made: list[str]) -> None:
    container = client.api.create_container(
        IMAGE,
        entrypoint=["bash", "-c", SERVE, alias],
        user="0:0",
        labels={TEST_LABEL: "1"},
        host_config=client.api.create_host_config(network_mode=network),
        networking_config=client.api.create_networking_config(
            {network: client.api.create_endpoint_config(aliases=[alias], ipv4_address=subnet_ip)}
        ),
    )
    made.append(container["Id"])
    client.api.start(container["Id"])


def _remove_leftovers(client: docker.DockerClient) -> None:
    """What a killed earlier run of this module left (its fixed subnets would overlap)."""
    for container in client.api.containers(all=True, filters={"label": TEST_LABEL}):
        client.api.remove_container(container["Id"], force=True)
    for network in client.api.networks(filters={"label": TEST_LABEL}):
        for attached in client.api.inspect_network(network["Id"]).get("Containers") or {}:
            client.api.disconnect_container_from_network(attached, network["Id"], force=True)
        client.api.remove_network(network["Id"])


@pytest.fixture(scope="module")
def world(docker_client: docker.DockerClient) -> Iterator[World]:
    """Two networks, each with one web server on port 80 that names itself in its reply."""
    _remove_leftovers(docker_client)
    tag = uuid.uuid4().hex[:6]
    api = docker_client.api
    upstream, private = f"mf-test-up-{tag}", f"mf-test-priv-{tag}"
    containers: list[str] = []
    for name, subnet in ((upstream, PUBLIC_SUBNET), (private, PRIVATE_SUBNET)):
        pool = docker.types.IPAMPool(subnet=subnet, gateway=subnet.replace("0/24", "1"))
        api.create_network(name, ipam=docker.types.IPAMConfig(pool_configs=[pool]), labels={TEST_LABEL: "1"})
    try:
        _server(docker_client, upstream, "pkgs.allowed.test", "198.51.100.10", containers)
        _server(docker_client, private, "internal.allowed.test", "10.213.0.10", containers)
        yield World(upstream, private, "198.51.100.1")
    finally:
        for container in containers:
            api.remove_container(container, force=True)
        for name in (upstream, private):
            api.remove_network(name)


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A port listening on every address of this machine (the internal network's gateway included)."""
    with socket.socket() as server:
        server.bind(("0.0.0.0", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.fixture
def setup_sandbox(start_sandbox: Callable[..., DockerSandbox], world: World) -> Iterator[DockerSandbox]:
    """A sandbox in its setup phase whose proxy allows the test's hosts (and the host's gateway, to show it fails)."""
    hosts = [".allowed.test", world.gateway, "169.254.169.254", "ip6-localhost", "ip6-loopback", "localhost"]
    sandbox = start_sandbox(network=True, setup_hosts=hosts, setup_upstream_network=world.upstream)
    assert sandbox._proxy is not None
    sandbox.client.api.connect_container_to_network(sandbox._proxy.container_id, world.private)
    yield sandbox
    sandbox.close()  # before the world's networks go: the proxy is on them


def test_an_allowed_host_on_a_public_address_is_reached_through_the_proxy(setup_sandbox: DockerSandbox) -> None:
    result = setup_sandbox.execute(FETCH + "http://pkgs.allowed.test/")
    assert result.output == "served-by-pkgs.allowed.test\n"


def test_a_host_not_on_the_list_is_refused(setup_sandbox: DockerSandbox, world: World) -> None:
    assert setup_sandbox.execute(FETCH + "http://198.51.100.10/").output == "403"


def test_an_allowed_name_on_a_private_address_is_refused(setup_sandbox: DockerSandbox) -> None:
    assert setup_sandbox.execute(FETCH + "http://internal.allowed.test/").output == "403"


@pytest.mark.parametrize(
    "url",
    [
        "http://ip6-localhost/",
        "http://ip6-loopback/",
        "http://localhost/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://[fc00::1]/",
    ],
)
def test_allowed_names_and_literals_on_ipv6_loopback_link_local_or_unique_local_are_refused(
    setup_sandbox: DockerSandbox, url: str
) -> None:
    assert setup_sandbox.execute(FETCH + url).output == "403"


def test_the_host_and_cloud_metadata_are_refused_even_when_listed(setup_sandbox: DockerSandbox, world: World) -> None:
    assert setup_sandbox.execute(FETCH + f"http://{world.gateway}/").output == "403"
    assert setup_sandbox.execute(FETCH + "http://169.254.169.254/latest/meta-data/").output == "403"


def test_without_the_proxy_nothing_is_reached_not_even_the_host(
    setup_sandbox: DockerSandbox, host_listener: int
) -> None:
    direct = setup_sandbox.execute(DIRECT + "http://198.51.100.10/")
    assert direct.returncode != 0 and "served-by" not in direct.output
    gateway = setup_sandbox.execute(GATEWAY).output.strip()
    assert gateway  # the internal network's gateway is the host's bridge address
    to_host = setup_sandbox.execute(CONNECT + f"{gateway} {host_listener}").output
    assert "connected" not in to_host and "timed out" in to_host  # dropped, where the bare network connects


def test_setup_processes_die_and_the_network_goes_before_the_agent(setup_sandbox: DockerSandbox) -> None:
    # Their output goes nowhere, so the action returns at once and they outlive it (holding its pipe they would keep
    # it to its timeout, whose kill would end them before disconnect_network could).
    setup_sandbox.execute("setsid -f sleep 4242 >/dev/null 2>&1; (sleep 4343 >/dev/null 2>&1 &)")
    before = setup_sandbox.execute("ps -eo args").output
    assert "sleep 4242" in before and "sleep 4343" in before
    proxy = setup_sandbox._proxy
    assert proxy is not None
    setup_sandbox.disconnect_network()
    left = setup_sandbox.execute("ps -eo args").output
    assert "sleep 4242" not in left and "sleep 4343" not in left
    assert setup_sandbox.execute("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").output.split() == ["lo"]
    assert not setup_sandbox.client.api.containers(all=True, filters={"id": proxy.container_id})


@pytest.mark.parametrize(
    "address", ["::1", "::", "fe80::1", "febf::1", "fc00::1", "fd12:3456::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1"]
)
def test_every_ipv6_loopback_link_local_unique_local_and_mapped_address_is_in_the_denied_ranges(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert ip.is_loopback or ip.is_link_local or ip.is_private or ip.is_unspecified or ip.ipv4_mapped
    assert any(ip in ipaddress.ip_network(net) for net in DENIED_NETWORKS)
