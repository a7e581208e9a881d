"""The tools' own configuration files for the operator's registry mirrors, written into the sandbox's HOME when
its setup phase starts (sandbox/docker.py) and kept with setup's result, so the network-less test runs after it
read the same sources offline.

Cargo and Maven take a mirror from a file only: cargo's source replacement (`[source.crates-io] replace-with`)
cannot be set from the environment, and an offline `cargo test` must name the same replaced source as the
`cargo fetch` that filled its cache. These files are readable by the agent like all of HOME, so a mirror URL
here carries no credentials (settings.py refuses one that does).
"""

from __future__ import annotations

import json

CARGO_CONFIG = ".cargo/config.toml"
CARGO_SOURCE = "mini-fix-mirror"


def mirror_files(cargo_mirror: str) -> dict[str, str]:
    """HOME-relative path -> text for each mirror the operator set ({} when none)."""
    files: dict[str, str] = {}
    if cargo_mirror:
        files[CARGO_CONFIG] = (
            "# Written by mini-fix from MINIFIX_SETUP_CARGO_MIRROR: crates.io's crates come from this mirror.\n"
            f'[source.crates-io]\nreplace-with = "{CARGO_SOURCE}"\n\n'
            f"[source.{CARGO_SOURCE}]\nregistry = {json.dumps(cargo_mirror)}\n"
        )
    return files
