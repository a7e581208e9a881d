"""The tools' own configuration files for the operator's registry mirrors, written into the sandbox's HOME when
its setup phase starts (sandbox/docker.py) and kept with setup's result, so the network-less test runs after it
read the same sources offline.

Cargo and Maven take a mirror (and Maven its proxy) from a file only: cargo's source replacement
(`[source.crates-io] replace-with`) cannot be set from the environment, and an offline `cargo test` must name the
same replaced source as the `cargo fetch` that filled its cache. These files are readable by the agent like all
of HOME, so a mirror URL here carries no credentials (settings.py refuses one that does).
"""

from __future__ import annotations

import json
from xml.sax.saxutils import escape

from sandbox.setup_proxy import PROXY_PORT

CARGO_CONFIG = ".cargo/config.toml"
CARGO_SOURCE = "mini-fix-mirror"
MAVEN_SETTINGS = ".m2/settings.xml"
# Maven reads its proxy from settings.xml only; the setup phase's environment names the proxy (SetupProxy.env),
# so this file holds no address (the port is the proxy's fixed one) and tells an offline `mvn -o` after setup
# nothing it would use.
MAVEN_PROXIES_TEMPLATE = """  <proxies>
    <proxy><id>mini-fix-setup-http</id><active>true</active><protocol>http</protocol>
      <host>${env.MINIFIX_SETUP_PROXY_HOST}</host><port>{port}</port></proxy>
    <proxy><id>mini-fix-setup-https</id><active>true</active><protocol>https</protocol>
      <host>${env.MINIFIX_SETUP_PROXY_HOST}</host><port>{port}</port></proxy>
  </proxies>
"""
MAVEN_PROXIES = MAVEN_PROXIES_TEMPLATE.replace("{port}", str(PROXY_PORT))  # Maven parses the port before ${env.*}


def mirror_files(cargo_mirror: str, maven_mirror: str = "") -> dict[str, str]:
    """HOME-relative path -> text: Maven's settings (the setup proxy, and the operator's mirror of every remote
    repository where set) always, cargo's config when the operator set a cargo mirror."""
    mirror = ""
    if maven_mirror:
        mirror = (
            "  <mirrors>\n    <mirror><id>mini-fix-mirror</id><mirrorOf>external:*</mirrorOf>"
            f"<url>{escape(maven_mirror)}</url></mirror>\n  </mirrors>\n"
        )
    files = {
        MAVEN_SETTINGS: "<!-- Written by mini-fix for the setup phase (MINIFIX_SETUP_MAVEN_MIRROR). -->\n"
        f"<settings>\n{mirror}{MAVEN_PROXIES}</settings>\n"
    }
    if cargo_mirror:
        files[CARGO_CONFIG] = (
            "# Written by mini-fix from MINIFIX_SETUP_CARGO_MIRROR: crates.io's crates come from this mirror.\n"
            f'[source.crates-io]\nreplace-with = "{CARGO_SOURCE}"\n\n'
            f"[source.{CARGO_SOURCE}]\nregistry = {json.dumps(cargo_mirror)}\n"
        )
    return files
