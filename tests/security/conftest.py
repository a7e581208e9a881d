"""The security probes run against the real DockerSandbox: the engine fixtures are the integration tier's."""

from __future__ import annotations

from tests.integration.conftest import docker_client, sandbox, start_sandbox

__all__ = ["docker_client", "sandbox", "start_sandbox"]
