"""The worker's sandbox images: made to exist on its engine before it takes jobs; readiness asks `check`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import structlog

from bot.settings import Settings

if TYPE_CHECKING:
    from docker import DockerClient

RETRY_SECONDS = 30.0

log = structlog.get_logger(__name__)


class SandboxImages:
    """Pulls or builds the configured sandbox image once per process; `check` raises while it is not there."""

    def __init__(self, settings: Settings) -> None:
        self.name = settings.sandbox_image
        self._base_image = settings.sandbox_base_image
        self._base_rootfs = settings.sandbox_base_rootfs
        self._profile = settings.sandbox_profile
        self._ready = threading.Event()
        self._problem = "not checked yet"
        self._making = threading.Lock()  # one pull or build at a time, however many job slots find it missing

    def ensure(self) -> str:
        """Make the image exist (present, pulled or built); how it came to be, or SandboxError."""
        from sandbox.engine import connect
        from sandbox.images import ImageSource, ensure_image

        source = ImageSource(self._base_image, self._base_rootfs, profile=self._profile)
        started = time.monotonic()
        how = ensure_image(connect(), self.name, source, _progress)
        self._ready.set()
        log.info("sandbox image ready", image=self.name, how=how, seconds=round(time.monotonic() - started, 1))
        return how

    def ensure_until_ready(self, stopping: threading.Event) -> None:
        """`ensure`, again every RETRY_SECONDS while it fails (no engine yet, a failed build), until it works."""
        from sandbox.base import SandboxError

        while not stopping.is_set():
            try:
                self.ensure()
                return
            except SandboxError as exc:
                self._problem = str(exc)
                log.warning("sandbox image not ready", image=self.name, error=self._problem, retry_in=RETRY_SECONDS)
            stopping.wait(RETRY_SECONDS)

    def ensure_present(self) -> None:
        """Before the worker takes a job: the image is on the engine, or made again (pulled or built) when it went
        missing since (someone removed it while the App ran); raises while it cannot be, and the job waits."""
        from sandbox.images import exists

        with self._making:
            with self._client() as client:
                if exists(client, self.name):
                    return
            self._ready.clear()  # readiness says so while it is made again
            self._problem = "gone from the engine; being made again before the next job"
            log.warning("sandbox image missing; making it again before taking a job", image=self.name)
            try:
                self.ensure()
            except Exception as exc:
                self._problem = f"gone from the engine, and making it again failed: {exc}"
                raise

    def check_engine(self) -> None:
        """Raise while the worker's Docker engine does not answer."""
        with self._client() as client:
            client.ping()

    def check(self) -> None:
        """Raise while the image is not known to exist, or when it has gone from the engine since."""
        if not self._ready.is_set():
            raise RuntimeError(f"sandbox image {self.name}: {self._problem}")
        from sandbox.images import exists

        with self._client() as client:
            if not exists(client, self.name):
                raise RuntimeError(f"sandbox image {self.name} is no longer on the engine")

    @contextmanager
    def _client(self) -> Iterator[DockerClient]:
        from sandbox.engine import connect, translated

        with translated(self.name):
            client = connect()
            try:
                yield client
            finally:
                client.close()


def _progress(line: str) -> None:
    log.info("sandbox image", step=line)
