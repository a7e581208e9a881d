"""The setup proxy's configuration refuses a name not on the list before any rule that resolves a name (issue 32 #4).

The real proxy is exercised with a stub resolver in tests/security/test_setup_proxy_dns.py; this checks the order
without an engine.
"""

from __future__ import annotations

from sandbox.setup_proxy import DENIED_NETWORKS, squid_conf


def test_no_rule_that_resolves_a_name_comes_before_the_allowlist() -> None:
    conf = squid_conf(["pypi.org", ".pythonhosted.org"], DENIED_NETWORKS).splitlines()
    acls = {line.split()[1]: line.split()[2:] for line in conf if line.startswith("acl ")}
    resolving = {name for name, spec in acls.items() if spec[0] in ("dst", "dstdom_regex")} | {"to_localhost"}
    rules = [line.split()[1:] for line in conf if line.startswith("http_access ")]
    assert rules[0] == ["deny", "!allowed_hosts"]
    assert acls["allowed_hosts"][:2] == ["dstdomain", "-n"]  # no reverse lookup of an address literal either
    first_resolving = min(i for i, rule in enumerate(rules) if {a.lstrip("!") for a in rule[1:]} & resolving)
    assert first_resolving > 0
