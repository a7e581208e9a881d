"""A package registry mirror a test tier starts itself: real releases taken from Debian's source packages (an
`.orig.tar.*` is the upstream release, so the checksums a project pins still match), laid out as the ecosystems'
own registries (a Go module proxy; a sparse cargo registry) and served over plain HTTP on port 80 by a container
on a network of its own, which the setup proxy joins as its upstream network (MINIFIX_SETUP_UPSTREAM_NETWORK).

Downloads are cached under ${MINIFIX_CACHE_DIR:-~/.cache/mini-fix}/debian-sources, keyed by file name (a Debian
pool file name carries the package's name and version and never changes).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
import tomllib
import urllib.request
import uuid
import zipfile
from pathlib import Path
from types import TracebackType
from typing import Any

import docker

DEBIAN_POOL = "http://deb.debian.org/debian/pool/main"
SERVER_IMAGE = os.environ.get("MINIFIX_MIRROR_IMAGE", "mini-fix-base:trixie")  # any image with python3
GO_EPOCH = "2021-01-01T00:00:00Z"  # .info's Time: the proxy protocol needs one, nothing checks it


def cache_dir() -> Path:
    base = os.environ.get("MINIFIX_CACHE_DIR") or str(Path.home() / ".cache" / "mini-fix")
    return Path(base) / "debian-sources"


def debian_source(package: str, filename: str) -> Path:
    """The pool file (e.g. `golang-blackfriday-v2_2.1.0.orig.tar.gz` of source package `golang-blackfriday-v2`),
    downloaded once."""
    where = cache_dir() / filename
    if where.is_file():
        return where
    where.parent.mkdir(parents=True, exist_ok=True)
    prefix = package[:4] if package.startswith("lib") else package[0]
    url = f"{DEBIAN_POOL}/{prefix}/{package}/{filename}"
    partial = where.with_suffix(f".part{os.getpid()}")
    with urllib.request.urlopen(url, timeout=60) as reply, partial.open("wb") as out:
        shutil.copyfileobj(reply, out)
    partial.replace(where)
    return where


def unpack(archive: Path, dest: Path) -> Path:
    """The archive's one top-level directory, extracted under `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    return top


def _files(src: Path) -> list[str]:
    return sorted(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file() and ".git" not in p.parts)


def go_h1(files: dict[str, bytes]) -> str:
    """Go's `h1:` hash (golang.org/x/mod/sumdb/dirhash Hash1) of a module's files, named `module@version/path`."""
    summary = "".join(f"{hashlib.sha256(files[name]).hexdigest()}  {name}\n" for name in sorted(files))
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def add_go_module(proxy: Path, module: str, version: str, src: Path) -> str:
    """Write `module@version` from the release tree `src` into a GOPROXY tree (the module's zip, .mod, .info and
    list, all a static server needs); its `h1:` hash, which must equal the one in the project's go.sum."""
    assert module == module.lower(), "upper-case module paths need the proxy protocol's !-escaping"
    prefix = f"{module}@{version}"
    files = {f"{prefix}/{name}": (src / name).read_bytes() for name in _files(src)}
    assert not any(n.endswith("/go.mod") and n != f"{prefix}/go.mod" for n in files), "nested modules: not handled"
    at = proxy / module / "@v"
    at.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            archive.writestr(name, data)
    (at / f"{version}.zip").write_bytes(buffer.getvalue())
    mod = files.get(f"{prefix}/go.mod", f"module {module}\n".encode())
    (at / f"{version}.mod").write_bytes(mod)
    (at / f"{version}.info").write_text(json.dumps({"Version": version, "Time": GO_EPOCH}))
    (at / "list").write_text(version + "\n")
    return go_h1(files)


def debian_binary(package: str, filename: str) -> Path:
    """A binary package's pool file (Debian's librust-*-dev carry a crate's files under /usr/share/cargo/registry),
    downloaded once; a source package's `.orig` of a crate is often absent from the pool this machine reaches."""
    return debian_source(package, filename)


def deb_tree(deb: Path, dest: Path, inside: str) -> Path:
    """The directory `inside` of a .deb's data, extracted under `dest` with the image's own `dpkg-deb`."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True, capture_output=True)
    return dest / inside.lstrip("/")


def _crate_deps(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    deps = []
    for table, kind in (("dependencies", "normal"), ("dev-dependencies", "dev"), ("build-dependencies", "build")):
        for name, spec in (manifest.get(table) or {}).items():
            spec = {"version": spec} if isinstance(spec, str) else spec
            deps.append({
                "name": name, "req": spec.get("version", "*"), "features": spec.get("features", []),
                "optional": spec.get("optional", False), "default_features": spec.get("default-features", True),
                "target": None, "kind": kind,
            })  # fmt: skip
    return deps


def add_crate(registry: Path, src: Path) -> str:
    """Pack the crate's files in `src` (its normalized Cargo.toml included) as `name-version.crate` into a sparse
    registry (index line and file) and return the .crate's sha256, which the index carries and cargo checks."""
    manifest = tomllib.loads((src / "Cargo.toml").read_text())
    name, version = manifest["package"]["name"], manifest["package"]["version"]
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as tar:
        for rel in _files(src):
            if rel in (".cargo-checksum.json", ".cargo_vcs_info.json"):
                continue
            info = tar.gettarinfo(str(src / rel), arcname=f"{name}-{version}/{rel}")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            with (src / rel).open("rb") as data:
                tar.addfile(info, data)
    crate = buffer.getvalue()
    sha = hashlib.sha256(crate).hexdigest()
    target = registry / "crates" / name / version / "download"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(crate)
    lower = name.lower()
    shard = {1: "1", 2: "2", 3: f"3/{lower[0]}"}.get(len(lower), f"{lower[:2]}/{lower[2:4]}")
    line = {"name": name, "vers": version, "deps": _crate_deps(manifest), "cksum": sha,
            "features": manifest.get("features", {}), "yanked": False}  # fmt: skip
    index = registry / shard / lower
    index.parent.mkdir(parents=True, exist_ok=True)
    with index.open("a") as out:
        out.write(json.dumps(line) + "\n")
    return sha


def cargo_registry_config(registry: Path, url: str) -> None:
    """The sparse registry's config.json: where its crates are downloaded from (`url` is its root)."""
    (registry / "config.json").write_text(json.dumps({"dl": f"{url.rstrip('/')}/crates"}))


def add_maven_artifact(repository: Path, maven_repo: Path, group: str, artifact: str, version: str) -> None:
    """Copy `group:artifact:version`'s pom and jar from a Debian `maven-repo` tree (its jar a link into
    /usr/share/java, resolved inside the same extracted package) into a Maven repository layout, with .sha1 files
    (Maven checks them)."""
    rel = Path(*group.split("."), artifact, version)
    target = repository / rel
    target.mkdir(parents=True, exist_ok=True)
    for ext in ("pom", "jar"):
        source = maven_repo / rel / f"{artifact}-{version}.{ext}"
        data = source.read_bytes() if not source.is_symlink() else _in_tree(maven_repo, source).read_bytes()
        (target / source.name).write_bytes(data)
        (target / f"{source.name}.sha1").write_text(hashlib.sha1(data).hexdigest())


def _in_tree(maven_repo: Path, link: Path) -> Path:
    """A package's relative link, followed within the extracted package (`maven_repo` is its usr/share/maven-repo)."""
    root = maven_repo.parents[2]  # the extraction root
    resolved = (link.parent / os.readlink(link)).resolve()
    absolute = Path("/") / resolved.relative_to(root.resolve())
    return root / absolute.relative_to("/")


class MirrorServer:
    """A static HTTP server on port 80 serving `root`, in a container on a fresh engine network of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = docker.from_env()
        self.network = f"mini-fix-mirror-{uuid.uuid4().hex[:10]}"
        self.container_id = ""
        self.address = ""

    def __enter__(self) -> MirrorServer:
        self.client.networks.create(self.network, driver="bridge", labels={"mini-fix-test": "mirror"})
        try:
            container = self.client.containers.run(
                SERVER_IMAGE,
                ["python3", "-u", "-m", "http.server", "80", "--directory", "/srv"],
                detach=True,
                network=self.network,
                volumes={str(self.root.resolve()): {"bind": "/srv", "mode": "ro"}},
                labels={"mini-fix-test": "mirror"},
            )
            self.container_id = container.id or ""
            container.reload()
            self.address = container.attrs["NetworkSettings"]["Networks"][self.network]["IPAddress"]
            self._wait(container)
        except BaseException:
            self.close()
            raise
        return self

    def _wait(self, container: docker.models.containers.Container) -> None:
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            if b"Serving HTTP" in container.logs():
                return
            time.sleep(0.2)
        raise RuntimeError(f"the mirror server did not start: {container.logs()[-500:]!r}")

    def stop(self) -> None:
        """Take the mirror down (the network stays): a setup that needs it then fails."""
        if self.container_id:
            self.client.api.remove_container(self.container_id, force=True)
            self.container_id = ""

    def close(self) -> None:
        self.stop()
        with contextlib.suppress(docker.errors.NotFound):
            self.client.networks.get(self.network).remove()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
