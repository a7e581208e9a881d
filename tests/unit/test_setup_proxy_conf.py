"""The setup proxy's configuration refuses a name not on the list before any rule that resolves a name (issue 32 #4).

The real proxy is exercised with a stub resolver in tests/security/test_setup_proxy_dns.py; this checks the order
without an engine.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.settings import Settings
from sandbox.base import SandboxError
from sandbox.setup_proxy import DENIED_NETWORKS, mirror_ranges, squid_conf


def test_no_rule_that_resolves_a_name_comes_before_the_allowlist() -> None:
    conf = squid_conf(["pypi.org", ".pythonhosted.org"], DENIED_NETWORKS).splitlines()
    acls = {line.split()[1]: line.split()[2:] for line in conf if line.startswith("acl ")}
    resolving = {name for name, spec in acls.items() if spec[0] in ("dst", "dstdom_regex")} | {"to_localhost"}
    rules = [line.split()[1:] for line in conf if line.startswith("http_access ")]
    assert rules[0] == ["deny", "!allowed_hosts"]
    assert acls["allowed_hosts"][:2] == ["dstdomain", "-n"]  # no reverse lookup of an address literal either
    first_resolving = min(i for i, rule in enumerate(rules) if {a.lstrip("!") for a in rule[1:]} & resolving)
    assert first_resolving > 0


def test_an_operator_mirror_is_allowed_before_private_ranges_are_refused_and_only_for_allowed_names() -> None:
    conf = squid_conf(["172.19.0.2"], DENIED_NETWORKS, ["172.19.0.2/32"]).splitlines()
    rules = [line.split()[1:] for line in conf if line.startswith("http_access ")]
    assert "acl mirror_addresses dst 172.19.0.2/32" in conf
    mirror = rules.index(["allow", "allowed_hosts", "mirror_addresses"])
    assert rules.index(["deny", "!allowed_hosts"]) < mirror < rules.index(["deny", "denied_addresses"])
    assert rules.index(["deny", "to_localhost"]) < mirror  # loopback stays refused whatever the setting says
    assert "mirror_addresses" not in squid_conf(["pypi.org"], DENIED_NETWORKS)  # none set: no exception at all


def test_a_mirror_range_holding_the_engine_host_is_refused() -> None:
    assert mirror_ranges(["172.19.0.2/32"], ["172.19.0.1"]) == ["172.19.0.2/32"]
    with pytest.raises(SandboxError, match="the host's address on the upstream network"):
        mirror_ranges(["172.19.0.0/24"], ["172.19.0.1"])
    with pytest.raises(ValueError):
        squid_conf(["x.example"], DENIED_NETWORKS, ["x.example"])


@pytest.mark.parametrize("bad", ["127.0.0.1", "169.254.169.254", "0.0.0.0/8", "fc00::1", "nexus.internal"])
def test_the_mirror_setting_refuses_loopback_link_local_and_non_addresses(bad: str) -> None:
    with pytest.raises(ValidationError, match="MINIFIX_SETUP_MIRROR_ADDRESSES"):
        Settings(setup_mirror_addresses=bad)
    assert Settings(setup_mirror_addresses="10.1.2.3, 192.168.7.0/24").setup_mirror_addresses == [
        "10.1.2.3/32", "192.168.7.0/24"
    ]  # fmt: skip
