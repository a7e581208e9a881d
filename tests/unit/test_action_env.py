"""The environment of a sandbox's commands: ~/.venv/bin before the image's PATH; setup's variables in setup only."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.action_env import CA_VARIABLES, DEFAULT_PATH, SETUP_CA_PATH, action_env, ca_bytes, setup_env
from sandbox.base import SandboxConfig, SandboxError

IMAGE_ENV = ["HOME=/home/agent", "PATH=/usr/lib/go/bin:/usr/bin:/bin", "LANG=C.UTF-8"]


def test_the_venv_goes_before_the_images_own_path() -> None:
    env = action_env(SandboxConfig(env={"PAGER": "cat"}), IMAGE_ENV)
    assert env == {"PAGER": "cat", "PATH": "/home/agent/.venv/bin:/usr/lib/go/bin:/usr/bin:/bin"}


def test_an_image_without_path_gets_dockers_and_without_home_no_tilde_entry() -> None:
    config = SandboxConfig(path_prepend=["~/.venv/bin", "/opt/tools/bin"])
    assert action_env(config, ["PATH=/bin"])["PATH"] == "/opt/tools/bin:/bin"
    assert action_env(SandboxConfig(), ["HOME=/root"])["PATH"] == f"/root/.venv/bin:{DEFAULT_PATH}"


def test_a_path_the_config_sets_is_kept_and_nothing_to_prepend_changes_nothing() -> None:
    assert action_env(SandboxConfig(env={"PATH": "/x"}), IMAGE_ENV) == {"PATH": "/x"}
    assert action_env(SandboxConfig(path_prepend=[]), IMAGE_ENV) == {}


def test_setup_gets_the_operators_variables_the_ca_file_and_the_proxy_over_them() -> None:
    config = SandboxConfig(setup_env={"PIP_INDEX_URL": "https://u:t@nexus/simple", "https_proxy": "http://evil"})
    env = setup_env(config, {"https_proxy": "http://proxy:3128"}, with_ca=True)
    assert env["PIP_INDEX_URL"] == "https://u:t@nexus/simple" and env["https_proxy"] == "http://proxy:3128"
    assert all(env[name] == SETUP_CA_PATH for name in CA_VARIABLES)
    assert "SSL_CERT_FILE" not in setup_env(config, {}, with_ca=False)


def test_setup_variables_are_never_shown_by_the_configs_repr() -> None:
    assert "u:t@nexus" not in repr(SandboxConfig(setup_env={"PIP_INDEX_URL": "https://u:t@nexus/simple"}))


def test_the_ca_file_must_be_a_pem_bundle(tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert ca_bytes(str(pem)).startswith(b"-----BEGIN CERTIFICATE-----")
    (tmp_path / "key").write_text("not a certificate")
    with pytest.raises(SandboxError, match="MINIFIX_SETUP_CA_FILE"):
        ca_bytes(str(tmp_path / "key"))
    with pytest.raises(SandboxError, match="cannot be read"):
        ca_bytes(str(tmp_path / "missing.pem"))
