"""The GitLab instance a worker talks to: one python-gitlab client with bounded 429 waits, the token's user, and
which issue or MR each note seen is on. Per-project calls are `bot.gitlab.gateway.GitLabGateway`'s."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import gitlab
import requests

from bot.gitlab.errors import RetryAfter, call


class _Client(gitlab.Gitlab):
    """python-gitlab with its own 429 handling off (it sleeps whatever `Retry-After` says, unbounded): `errors.call`
    waits within a bound instead; server errors keep python-gitlab's few retries."""

    def http_request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.update(obey_rate_limit=False, max_retries=3)
        return super().http_request(*args, **kwargs)


class NoteParents:
    """note id -> the number of its issue or MR, for the notes this process posted or listed (GitLab edits a note
    through its parent); the oldest forgotten past MAX_NOTES, so a long-lived worker's memory stays bounded."""

    MAX_NOTES = 20_000

    def __init__(self) -> None:
        self._found: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def __setitem__(self, note_id: int, number: int) -> None:
        with self._lock:
            self._found[note_id] = number
            self._found.move_to_end(note_id)
            while len(self._found) > self.MAX_NOTES:
                self._found.popitem(last=False)

    def get(self, note_id: int) -> int | None:
        with self._lock:
            return self._found.get(note_id)

    def __len__(self) -> int:
        return len(self._found)


class GitLabInstance:
    """The GitLab instance: one python-gitlab client, the bot's identity, and which issue or MR each note we saw
    is on (GitLab edits a note through its parent). One per worker process."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float | None = None,
    ) -> None:
        self.url, self._token = url.rstrip("/"), token
        self.waits = RetryAfter()
        session = requests.Session()
        session.hooks["response"].append(self.waits.hook)
        # 429s are waited out by `errors.call` (bounded, then RateLimited); python-gitlab retries 5xx itself.
        self.gl = _Client(self.url, private_token=token, session=session, retry_transient_errors=True, timeout=60)
        self.sleep = sleep
        self.max_wait = max_wait
        self.note_parents = NoteParents()
        self._me: dict[str, Any] | None = None

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        kwargs: dict[str, Any] = {"max_wait": self.max_wait} if self.max_wait is not None else {}
        return call(what, fn, secret=self._token, waits=self.waits, sleep=self.sleep, **kwargs)

    @property
    def token(self) -> str:
        return self._token

    def me(self) -> dict[str, Any]:
        """The token's user (`/user`): a bot user, or a group/project access token's bot."""
        if self._me is None:
            self._me = self.call("reading the bot user", lambda: self.gl.http_get("/user"))
        return self._me
