"""Make sure a sandbox image exists on an engine: present, else pulled (a registry name), else built from `image/`.

The build needs no registry when its base can be had offline: a base already on the engine, else a root filesystem
tarball imported as the base (what `build-base-image.sh` makes with debootstrap; the App's image carries one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from docker.utils import parse_repository_tag

from sandbox.base import ImageMissing
from sandbox.engine import translated

IMAGE_CONTEXT = Path(__file__).resolve().parent / "image"
BASE_CMD = 'CMD ["/bin/bash"]'
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImageSource:
    """How to make a sandbox image that is neither present nor pullable: its Dockerfile's folder and base."""

    base_image: str = "mini-fix-base:trixie"
    """The build's BASE_IMAGE: used when present, else pulled, else imported from `base_rootfs`."""
    base_rootfs: Path | None = None
    """A tar (or tar.gz) of a root filesystem, imported as `base_image` when it cannot be had otherwise."""
    context: Path = IMAGE_CONTEXT
    """The folder holding the sandbox Dockerfile."""
    profile: str = "polyglot"
    """The Dockerfile's PROFILE: `polyglot` (Python, Node.js, Go, Rust, Java) or `slim` (Python only)."""


def has_registry(name: str) -> bool:
    """Whether an image name starts with a registry host (`ghcr.io/x`, `localhost:5000/x`), as docker reads it."""
    first, sep, _ = name.partition("/")
    return bool(sep) and ("." in first or ":" in first or first == "localhost")


def exists(client: docker.DockerClient, name: str) -> bool:
    """Whether the engine has this image."""
    try:
        client.images.get(name)
    except ImageNotFound:
        return False
    return True


def ensure_image(client: docker.DockerClient, name: str, source: ImageSource, progress: Progress) -> str:
    """Make `name` exist on the engine; returns how ("present", "pulled", "built"); ImageMissing when it cannot."""
    with translated(name):
        if exists(client, name):
            return "present"
        if has_registry(name) and _pull(client, name, progress):
            return "pulled"
        ensure_base(client, source, progress)
        build(client, name, source, progress)
    return "built"


def ensure_base(client: docker.DockerClient, source: ImageSource, progress: Progress) -> str:
    """Make the build's base exist: present, pulled, or imported from the root filesystem tarball."""
    base = source.base_image
    if exists(client, base):
        return "present"
    if _pull(client, base, progress):
        return "pulled"
    rootfs = source.base_rootfs
    if rootfs is None or not rootfs.is_file() or rootfs.stat().st_size == 0:
        raise ImageMissing(
            f"sandbox base image {base!r} is not on the engine, cannot be pulled, and no root filesystem tarball "
            "is configured (MINIFIX_SANDBOX_BASE_ROOTFS); pre-build it with scripts/ensure-docker.sh or docker load it"
        )
    progress(f"importing base image {base} from {rootfs} ({rootfs.stat().st_size // 2**20} MiB)")
    repository, tag = parse_repository_tag(base)
    client.api.import_image_from_file(str(rootfs), repository=repository, tag=tag or "latest", changes=[BASE_CMD])
    if not exists(client, base):
        raise ImageMissing(f"importing {rootfs} as {base!r} left no such image on the engine")
    return "imported"


def build(client: docker.DockerClient, name: str, source: ImageSource, progress: Progress) -> None:
    """Build `name` from the sandbox Dockerfile on `source.base_image`, reporting each step."""
    progress(f"building sandbox image {name} from {source.context} on {source.base_image}")
    started = time.monotonic()
    stream = client.api.build(path=str(source.context), tag=name, buildargs=_build_args(source), rm=True, decode=True)
    _follow(stream, progress, started)
    if not exists(client, name):
        raise ImageMissing(f"building sandbox image {name!r} finished without the image")
    progress(f"built sandbox image {name} in {time.monotonic() - started:.0f}s")


def _build_args(source: ImageSource) -> dict[str, str]:
    return {"BASE_IMAGE": source.base_image, "PROFILE": source.profile}


def _follow(stream: Iterable[dict[str, Any]], progress: Progress, started: float) -> None:
    for chunk in stream:
        if "error" in chunk:
            raise ImageMissing(f"building the sandbox image failed: {str(chunk['error']).strip()}")
        line = str(chunk.get("stream", "")).strip()
        if line.startswith("Step "):  # one line per Dockerfile step, not the commands' own output
            progress(f"{line} ({time.monotonic() - started:.0f}s)")


def _pull(client: docker.DockerClient, name: str, progress: Progress) -> bool:
    """Pull `name`; False when no registry answers or it has no such image (the caller builds instead)."""
    progress(f"pulling {name}")
    try:
        client.images.pull(name)
    except (APIError, DockerException) as exc:
        progress(f"could not pull {name}: {getattr(exc, 'explanation', None) or exc}")
        return False
    return exists(client, name)
