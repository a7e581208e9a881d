"""The setup phase's only way out: Debian's squid in its own container, allowing a list of hosts, no private range.

The sandbox joins an internal network on which the proxy is its one neighbour; the proxy alone also joins the
upstream network. An internal network still lets its containers reach the host at the bridge's gateway
address, so a one-shot helper in the sandbox's network namespace (NET_ADMIN there, which the sandbox never
has) drops every packet the sandbox sends except to the proxy's port. Squid resolves each name itself and
checks the address it will connect to, so an allowed name that resolves to a private, loopback, link-local
(cloud metadata) or the upstream network's gateway (the host) address is refused too. A name not on the list
is refused by its text before any rule that resolves it (`dst`, `to_localhost`), and `dstdomain -n` never
looks up an address's name: squid sends no DNS query for a name it refuses, so setup has no DNS channel out.
The proxy speaks IPv4 only: IPv6 is off in its network namespace (so no `::1`, link-local or unique-local
neighbour is reachable), and a name with no IPv4 address (`ip6-localhost`) is refused rather than tried.
"""

from __future__ import annotations

import ipaddress
import time
import uuid
from typing import Any

import docker

from sandbox.base import SandboxConfig, SandboxError
from sandbox.engine import LABEL, force_remove, remove_network, translated

PROXY_PORT = 3128
READY_SECONDS = 30.0
READY_LINE = b"Accepting HTTP Socket connections"
# Never reachable through the proxy, whatever name resolves to them (RFC 6890 special-purpose and private ranges).
DENIED_NETWORKS = [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "fc00::/7", "fe80::/10", "ff00::/8",
]  # fmt: skip
SQUID_CONF = """\
http_port {port}
pid_filename none
cache deny all
cache_mem 0 MB
access_log stdio:/dev/stdout
cache_log /dev/stderr
logfile_rotate 0
shutdown_lifetime 0 seconds
via off
forwarded_for delete
acl allowed_hosts dstdomain -n {hosts}
acl denied_addresses dst {denied}
acl ipv4_destination dst 0.0.0.0/1 128.0.0.0/1
acl safe_ports port 80 443
acl CONNECT method CONNECT
http_access deny !allowed_hosts
http_access deny !safe_ports
http_access deny CONNECT !safe_ports
http_access deny to_localhost
http_access deny !ipv4_destination
{mirrors}http_access deny denied_addresses
http_access allow allowed_hosts
http_access deny all
"""
PIN_RULES = (
    "iptables -P OUTPUT DROP && iptables -A OUTPUT -o lo -j ACCEPT && "
    "iptables -A OUTPUT -p tcp -d {address} --dport {port} -j ACCEPT && "
    "ip6tables -P OUTPUT DROP && ip6tables -A OUTPUT -o lo -j ACCEPT"
)
PIN_SECONDS = 30
# No IPv6 in the proxy's namespace: squid then drops IPv6 answers, so `dst` never sees an address it could use.
NO_IPV6 = {f"net.ipv6.conf.{i}.disable_ipv6": "1" for i in ("all", "default", "lo")}
START = 'printf "%s" "$SQUID_CONF" > /tmp/squid.conf && exec squid -N -f /tmp/squid.conf'


def squid_conf(hosts: list[str], denied: list[str], mirrors: list[str] | None = None) -> str:
    """Squid's configuration: the allowed names, then every denied address range; an allowed name whose address
    is one of the operator's `mirrors` (private addresses of its own registry mirrors) is let through before the
    private ranges are refused (loopback and non-IPv4 destinations never)."""
    for host in hosts:
        if not host or any(ch.isspace() or ch in "\"'#\\" for ch in host):
            raise SandboxError(f"not a host name for the setup proxy: {host!r}")
    allow = ""
    if mirrors:
        ranges = [str(ipaddress.IPv4Network(m)) for m in mirrors]  # raises on anything but an IPv4 range
        allow = f"acl mirror_addresses dst {' '.join(ranges)}\nhttp_access allow allowed_hosts mirror_addresses\n"
    hosts_text = " ".join(hosts) or "none.invalid"
    return SQUID_CONF.format(port=PROXY_PORT, hosts=hosts_text, denied=" ".join(denied), mirrors=allow)


def mirror_ranges(mirrors: list[str], gateways: list[str]) -> list[str]:
    """The operator's mirror ranges, refused (SandboxError) where one holds the host's own address on the
    upstream network: the host stays out of the proxy's reach whatever the setting says."""
    for mirror in mirrors:
        network = ipaddress.IPv4Network(mirror)
        if any(ipaddress.IPv4Address(g) in network for g in gateways if ":" not in g):
            raise SandboxError(
                f"MINIFIX_SETUP_MIRROR_ADDRESSES {mirror} holds the host's address on the upstream network "
                f"({', '.join(gateways)}): give the mirror's own address"
            )
    return mirrors


class SetupProxy:
    """One run's internal network and the proxy container on it."""

    def __init__(self, client: docker.DockerClient, network: str, container_id: str, address: str) -> None:
        self.client = client
        self.network = network
        self.container_id = container_id
        self.address = address

    @classmethod
    def start(cls, client: docker.DockerClient, config: SandboxConfig, labels: dict[str, str]) -> SetupProxy:
        """Create the internal network and start the proxy on it and on the upstream network; wait until it listens."""
        name = f"mini-fix-setup-{uuid.uuid4().hex[:10]}"
        api = client.api
        with translated(config.setup_proxy_image):
            api.create_network(name, driver="bridge", internal=True, labels={**labels, LABEL: "1"})
            proxy = cls(client, name, "", "")
            try:
                proxy._run(config, labels)
            except BaseException:
                proxy.close()
                raise
        return proxy

    def env(self) -> dict[str, str]:
        """The proxy variables the setup commands get (both spellings: tools differ; Maven's settings.xml reads
        the address from MINIFIX_SETUP_PROXY_HOST)."""
        url = f"http://{self.address}:{PROXY_PORT}"
        env = {key: url for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")}
        return {**env, "MINIFIX_SETUP_PROXY_HOST": self.address}

    def pin(self, config: SandboxConfig, sandbox_id: str, labels: dict[str, str]) -> None:
        """Let the started sandbox send packets to the proxy's port only (iptables in its network namespace)."""
        api = self.client.api
        with translated(config.setup_proxy_image):
            helper = api.create_container(
                config.setup_proxy_image,
                entrypoint=["sh", "-c", PIN_RULES.format(address=self.address, port=PROXY_PORT)],
                user="0:0",
                labels={**labels, LABEL: "1"},
                host_config=api.create_host_config(
                    network_mode=f"container:{sandbox_id}",
                    cap_drop=["ALL"],
                    cap_add=["NET_ADMIN", "NET_RAW"],
                    security_opt=["no-new-privileges"],
                ),
            )["Id"]
            try:
                api.start(helper)
                code = api.wait(helper, timeout=PIN_SECONDS)["StatusCode"]
                logs = api.logs(helper).decode("utf-8", "replace")[-1000:]
            finally:
                force_remove(self.client, helper)
        if code != 0:
            raise SandboxError(f"could not limit the setup network to the proxy: {logs}")

    def close(self) -> None:
        """Remove the proxy and the network. Idempotent; never raises."""
        if self.container_id:
            force_remove(self.client, self.container_id)
            self.container_id = ""
        if self.network:
            remove_network(self.client, self.network)
            self.network = ""

    def _run(self, config: SandboxConfig, labels: dict[str, str]) -> None:
        api = self.client.api
        gateways = self._gateways(config.setup_upstream_network)
        denied = [*DENIED_NETWORKS, *gateways]
        mirrors = mirror_ranges(config.setup_mirror_addresses, gateways)
        created = api.create_container(
            config.setup_proxy_image,
            entrypoint=["sh", "-c", START],
            environment={"SQUID_CONF": squid_conf(config.setup_hosts, denied, mirrors)},
            user="proxy",
            name=f"{self.network}-proxy",
            labels={**labels, LABEL: "1"},
            host_config=api.create_host_config(
                network_mode=self.network,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                tmpfs={"/tmp": "size=16m", "/var/spool/squid": "size=16m", "/var/log/squid": "size=16m"},
                mem_limit="256m",
                pids_limit=64,
                sysctls=NO_IPV6,
                log_config=docker.types.LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
            ),
        )
        self.container_id = created["Id"]
        api.connect_container_to_network(self.container_id, config.setup_upstream_network)
        api.start(self.container_id)
        self._wait_ready()
        settings = api.inspect_container(self.container_id)["NetworkSettings"]["Networks"]
        self.address = settings[self.network]["IPAddress"]

    def _gateways(self, network: str) -> list[str]:
        """The upstream network's gateways: the host's own addresses on it."""
        config: list[dict[str, Any]] = self.client.api.inspect_network(network).get("IPAM", {}).get("Config") or []
        return [entry["Gateway"] for entry in config if entry.get("Gateway")]

    def _wait_ready(self) -> None:
        give_up = time.monotonic() + READY_SECONDS
        while time.monotonic() < give_up:
            logs: bytes = self.client.api.logs(self.container_id, stdout=True, stderr=True)
            if READY_LINE in logs:
                return
            state = self.client.api.inspect_container(self.container_id)["State"]
            if not state.get("Running"):
                raise SandboxError(f"the setup proxy stopped: {logs[-1000:].decode('utf-8', 'replace')}")
            time.sleep(0.1)
        raise SandboxError(f"the setup proxy did not start within {READY_SECONDS:g}s")


def disconnect_all(client: docker.DockerClient, container_id: str, image: str) -> None:
    """Take the container off every network it is on (its loopback stays); raise if any is left."""
    with translated(image):
        networks = client.api.inspect_container(container_id)["NetworkSettings"]["Networks"] or {}
        for name in networks:
            client.api.disconnect_container_from_network(container_id, name, force=True)
        left = client.api.inspect_container(container_id)["NetworkSettings"]["Networks"] or {}
    if left:
        raise SandboxError(f"the sandbox is still on networks {sorted(left)} after disconnecting them")
