"""deploy/: compose files pass `docker-compose config`; Kubernetes manifests pass the bundled API schemas (strict)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
MANIFESTS = sorted((DEPLOY / "k8s").glob("*.yaml"))
KUBERNETES_VERSION = "1.30.0"
VARIABLE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)")


def compose_binary() -> list[str]:
    """docker-compose (Debian's) or the compose plugin; missing fails under CI and skips elsewhere."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    hint = "apt-get install -y docker-compose"
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(f"no docker compose here: {hint}", pytrace=False)
    pytest.skip(f"no docker compose here: {hint}")


@pytest.mark.parametrize("files", [["compose.yml"], ["compose.yml", "compose.scale.yml"]], ids=["one-host", "scale"])
def test_compose_files_are_valid(files: list[str], tmp_path: Path) -> None:
    for name in files:  # run from a copy, with the files compose wants to find beside them
        shutil.copy(DEPLOY / name, tmp_path / name)
    (tmp_path / ".env").write_text("MINIFIX_WEBHOOK_SECRET=example\n")
    (tmp_path / "github-app.private-key.pem").write_text("")
    args = [arg for name in files for arg in ("-f", name)]
    env = {**os.environ, "POSTGRES_PASSWORD": "example"}
    result = subprocess.run([*compose_binary(), *args, "config"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert {"app", "vllm"} <= set(services)
    assert services["vllm"]["profiles"] == ["vllm"]  # no GPU service unless --profile vllm
    for name, service in services.items():  # the model's address is the .env's: never overridden, never waited for
        assert not {"MINIFIX_MODEL", "MINIFIX_MODEL_API_BASE"} & set(service.get("environment", {})), name
        assert "vllm" not in service.get("depends_on", {}), name
    if "compose.scale.yml" in files:
        assert services["api"]["command"][-1] == "--no-worker"
        assert services["worker"]["command"] == ["worker", "--metrics-port", "9300"]
        assert services["worker"]["environment"]["MINIFIX_DATABASE_URL"].startswith("postgresql://")


@pytest.mark.parametrize("path", MANIFESTS, ids=[p.name for p in MANIFESTS])
def test_kubernetes_manifests_pass_the_schemas(path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_kubernetes_has_the_pieces_the_guide_names() -> None:
    kinds = {(d["kind"], d["metadata"]["name"]) for p in MANIFESTS for d in yaml.safe_load_all(p.read_text()) if d}
    assert {("Deployment", "mini-fix-api"), ("Service", "mini-fix-api"), ("Deployment", "mini-fix-worker"),
            ("Secret", "mini-fix"), ("Deployment", "vllm")} <= kinds  # fmt: skip
    vllm = next(d for d in yaml.safe_load_all((DEPLOY / "k8s" / "vllm.yaml").read_text()) if d["kind"] == "Deployment")
    assert vllm["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_a_broken_manifest_is_caught() -> None:
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {"replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSION, strict=True)


def test_env_example_lists_every_variable_compose_reads() -> None:
    read = {m for name in ("compose.yml", "compose.scale.yml") for m in VARIABLE.findall((DEPLOY / name).read_text())}
    listed = {line.lstrip("# ").split("=", 1)[0] for line in (DEPLOY / ".env.example").read_text().splitlines()}
    assert read and read <= listed, read - listed
    assert {"MINIFIX_APP_ID", "MINIFIX_WEBHOOK_SECRET", "MINIFIX_MODEL", "MINIFIX_MODEL_API_BASE"} <= listed


def test_compose_env_finds_the_docker_group(tmp_path: Path) -> None:
    socket_path = tmp_path / "docker.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(socket_path))
        env_file = tmp_path / ".env"
        env = {**os.environ, "DOCKER_SOCKET": str(socket_path)}
        script = str(DEPLOY.parent / "scripts" / "compose-env.sh")
        subprocess.run([script, str(env_file)], env=env, check=True, capture_output=True)
        assert env_file.stat().st_mode & 0o077 == 0  # made from the example, private: it will hold the secret
        assert f"DOCKER_GID={socket_path.stat().st_gid}" in env_file.read_text().splitlines()
        env_file.write_text("MINIFIX_APP_ID=7\nDOCKER_GID=1\n")
        subprocess.run([script, str(env_file)], env=env, check=True, capture_output=True)
    assert env_file.read_text() == f"MINIFIX_APP_ID=7\nDOCKER_GID={socket_path.stat().st_gid}\n"


def test_kubernetes_probes_use_each_roles_own_port_and_readiness() -> None:
    pods = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]
        for p in MANIFESTS
        for d in yaml.safe_load_all(p.read_text())
        if d and d["kind"] == "Deployment" and d["metadata"]["name"].startswith("mini-fix")
    }
    probes = {(name, c["readinessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["path"],
               c["readinessProbe"]["httpGet"]["port"]) for name, c in pods.items()}  # fmt: skip
    assert probes == {
        ("mini-fix-api", "/readyz", "/healthz", "http"),
        ("mini-fix-worker", "/readyz", "/healthz", "metrics"),
    }
    assert "9300" in pods["mini-fix-worker"]["args"] and pods["mini-fix-worker"]["ports"][0]["containerPort"] == 9300
