"""Failure injection for FakeGitHub: rules the HTTP handler consults before it answers a request (REST or git).

A rule names a method (`*`: any), a path regex (matched with `re.search` on the path, query left out), how many
matching requests it answers (None: all of them), and the answer: a status, headers and a body (JSON for the REST
API; a git request gets the status and an empty body, as git reads no JSON). Status 0 is a pass: the request is
served as usual, and counted. The first rule with answers left wins, in the order added; requests no rule takes
are served as usual. Each rule counts the requests it answered.

    github.faults.add("POST", r"/issues/\\d+/comments$", 403, count=2, headers={"Retry-After": "1"}, body=...)
    github.faults.git(0, 0, 502)  # the next two git requests pass, the third gets a 502
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

GIT_PATH = r"^/[^/]+/[^/]+\.git/"  # git's smart HTTP: /<owner>/<name>.git/...
PASS = 0  # a rule's status that lets the request through
SECONDARY_RATE_LIMIT = {
    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
}


@dataclass
class Fault:
    """One rule: which requests it answers and how."""

    method: str  # `*`: any
    path: str  # a regex, searched in the request's path
    status: int  # PASS: served as usual
    count: int | None = 1  # answers left; None: every matching request
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    hits: int = 0  # requests this rule answered

    def matches(self, method: str, path: str) -> bool:
        """Whether this rule takes the request and has an answer left."""
        left = self.count is None or self.hits < self.count
        methods = self.method == "*" or self.method.upper() == method.upper()
        return left and methods and re.search(self.path, path) is not None


class Faults:
    """The rules of one FakeGitHub (`github.faults`), thread-safe: the fake serves requests on many threads."""

    def __init__(self) -> None:
        self.rules: list[Fault] = []
        self._lock = threading.Lock()

    def add(
        self,
        method: str,
        path: str,
        status: int,
        *,
        count: int | None = 1,
        headers: dict[str, str] | None = None,
        body: Any = None,
    ) -> Fault:
        """Answer the next `count` matching requests with `status`; returns the rule (its `hits` count them)."""
        fault = Fault(method, path, status, count, dict(headers or {}), body)
        with self._lock:
            self.rules.append(fault)
        return fault

    def secondary_rate_limit(self, method: str, path: str, *, count: int | None = 1, retry_after: int = 1) -> Fault:
        """GitHub's 403 for a burst of writes, with `Retry-After`."""
        headers = {"Retry-After": str(retry_after)}
        return self.add(method, path, 403, count=count, headers=headers, body=SECONDARY_RATE_LIMIT)

    def git(self, *statuses: int) -> list[Fault]:
        """The next git requests, whatever their method, get these statuses in turn (PASS lets one through)."""
        return [self.add("*", GIT_PATH, status) for status in statuses]

    def take(self, method: str, path: str) -> Fault | None:
        """The rule that answers this request (counted as hit), or None when it is served as usual."""
        with self._lock:
            for fault in self.rules:
                if fault.matches(method, path):
                    fault.hits += 1
                    return None if fault.status == PASS else fault
        return None
