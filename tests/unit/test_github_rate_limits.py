"""GitHub's rate limits: the retry decision githubkit consults, the per-installation write pacer, and both wired in."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
import respx
from githubkit.exception import PrimaryRateLimitExceeded, RequestFailed, SecondaryRateLimitExceeded
from githubkit.response import Response

from bot.github.app import GitHubApp, RepoGateway
from bot.github.errors import translated
from bot.github.gateway import GitHubError, RateLimited
from bot.github.pacing import Pacers, WritePacer
from bot.github.retry import MAX_RETRIES, RateLimitRetry, rate_limit_wait
from bot.settings import Settings
from tests.support.fake_github import throwaway_key

API = "https://ghe.example.com/api/v3"
TOKEN = {"token": "ghs_installation", "expires_at": "2099-01-01T00:00:00Z"}
SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}


def response(status: int, data: Any = None, **headers: str) -> Response[Any]:
    request = httpx.Request("POST", f"{API}/repos/acme/widgets/issues/3/comments")
    return Response(httpx.Response(status, json=data or {}, headers=headers, request=request), Any)


def secondary(retry_after: int) -> SecondaryRateLimitExceeded:
    resp = response(403, SECONDARY, **{"retry-after": str(retry_after)})
    return SecondaryRateLimitExceeded(resp, timedelta(seconds=retry_after))


# -- the retry decision --------------------


def test_a_secondary_limit_is_waited_out_as_retry_after_says() -> None:
    decide = RateLimitRetry()
    assert decide(secondary(7), 0) == (True, timedelta(seconds=7))
    # githubkit's own decision gives up after one retry; ours keeps waiting within the bound
    assert decide(secondary(7), 1) == (True, timedelta(seconds=7))


def test_a_primary_limit_waits_until_the_reset() -> None:
    reset = time.time() + 120
    resp = response(403, {"message": "API rate limit exceeded"}, **{"x-ratelimit-remaining": "0"})
    exc = PrimaryRateLimitExceeded(resp, timedelta(seconds=reset - time.time()))
    do_retry, wait = RateLimitRetry()(exc, 0)
    assert do_retry and wait is not None and 100 < wait.total_seconds() <= 120


def test_a_limit_that_names_no_time_waits_a_minute_then_longer() -> None:
    for status, data in [(403, SECONDARY), (429, {"message": "Too Many Requests"})]:
        exc = RequestFailed(response(status, data))
        assert rate_limit_wait(exc, 0) == 60 and rate_limit_wait(exc, 1) == 120


def test_a_reset_already_past_still_waits_a_moment() -> None:
    # githubkit computes max(reset - now, 0), and sleeps a whole minute for a zero wait
    exc = PrimaryRateLimitExceeded(response(403, {}, **{"x-ratelimit-remaining": "0"}), timedelta())
    assert RateLimitRetry()(exc, 0) == (True, timedelta(seconds=1))


def test_the_bound_is_a_number_of_retries_and_a_longest_wait() -> None:
    decide = RateLimitRetry(max_retries=3, max_wait=300)
    assert decide(secondary(1), 2).do_retry
    assert not decide(secondary(1), 3).do_retry
    assert not decide(secondary(301), 0).do_retry  # such a wait is spent off the worker: the job is deferred


def test_other_failures_are_not_rate_limits() -> None:
    forbidden = RequestFailed(response(403, {"message": "Resource not accessible by integration"}))
    assert rate_limit_wait(forbidden) is None
    assert not RateLimitRetry()(forbidden, 0).do_retry
    assert not RateLimitRetry()(RequestFailed(response(422, {"message": "Validation Failed"})), 0).do_retry


def test_server_errors_keep_githubkits_retry() -> None:
    failed = RequestFailed(response(502, {"message": "Bad Gateway"}))
    assert RateLimitRetry()(failed, 0) == (True, timedelta(seconds=1))
    assert not RateLimitRetry()(failed, 3).do_retry


def test_a_limit_outlasting_the_retries_becomes_rate_limited_with_the_wait() -> None:
    expected = pytest.raises(RateLimited, match="posting a comment: HTTP 403 You have exceeded")
    with expected as caught, translated("posting a comment"):
        raise secondary(42)
    assert caught.value.retry_after == 42 and isinstance(caught.value, GitHubError)


# -- the pacer --------------------


class FakeTime:
    """A clock that only moves when the pacer sleeps (or the test says so)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_writes_of_one_installation_start_a_second_after_the_last_one_ended() -> None:
    t = FakeTime()
    pacer = WritePacer(1.0, clock=t.clock, sleep=t.sleep)
    with pacer.turn():
        t.now += 0.25  # the request itself
    with pacer.turn():
        pass
    assert t.sleeps == [1.0]
    t.now += 0.4
    with pacer.turn():
        pass
    assert t.sleeps == [1.0, pytest.approx(0.6)]
    t.now += 5
    with pacer.turn():
        pass
    assert len(t.sleeps) == 2  # nothing to wait for


def test_writes_are_never_concurrent() -> None:
    pacer = WritePacer(0.0)
    inside, release, second_in = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with pacer.turn():
            inside.set()
            release.wait(5)

    def second() -> None:
        with pacer.turn():
            second_in.set()

    a, b = threading.Thread(target=first), threading.Thread(target=second)
    a.start()
    assert inside.wait(5)
    b.start()
    assert not second_in.wait(0.3)  # the first write still holds the turn
    release.set()
    assert second_in.wait(5)
    a.join()
    b.join()


def test_each_installation_has_its_own_pacer() -> None:
    pacers = Pacers()
    assert pacers.of(1) is pacers.of(1)
    assert pacers.of(1) is not pacers.of(2)


# -- wired into the App's clients --------------------


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=API, assert_all_called=False) as router:
        router.post("/app/installations/7/access_tokens").respond(201, json=TOKEN)
        yield router


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """githubkit's waits between tries (it calls time.sleep), recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(time, "sleep", recorded.append)
    return recorded


def gateway(pacers: Pacers | None = None) -> RepoGateway:
    settings = Settings(app_id=99, private_key=throwaway_key(), github_api_url=API)
    return GitHubApp(settings, pacers=pacers or Pacers(lambda: WritePacer(0.0))).for_repo(7, "acme/widgets")


def limited(retry_after: str = "1") -> httpx.Response:
    return httpx.Response(403, json=SECONDARY, headers={"Retry-After": retry_after})


def test_a_comment_post_waits_out_two_secondary_limits(api: respx.MockRouter, sleeps: list[float]) -> None:
    ok = httpx.Response(201, json={"id": 11, "body": "hi"})
    route = api.post("/repos/acme/widgets/issues/3/comments").mock(side_effect=[limited(), limited(), ok])
    assert gateway().create_comment(3, "hi") == 11
    assert route.call_count == 3 and sleeps == [1.0, 1.0]


def test_a_limit_past_the_bound_is_raised_as_rate_limited(api: respx.MockRouter, sleeps: list[float]) -> None:
    route = api.post("/repos/acme/widgets/issues/3/comments").mock(return_value=limited("30"))
    with pytest.raises(RateLimited) as caught:
        gateway().create_comment(3, "hi")
    assert caught.value.retry_after == 30
    assert route.call_count == MAX_RETRIES + 1 and sleeps == [30.0] * MAX_RETRIES


def test_reads_do_not_wait_for_a_write_turn(api: respx.MockRouter) -> None:
    api.get("/repos/acme/widgets/issues/3").respond(200, json={"number": 3, "title": "t", "body": "", "user": {}})
    pacers = Pacers(lambda: WritePacer(0.0))
    gh, done = gateway(pacers), threading.Event()
    with pacers.of(7).turn():  # a write of the installation in flight
        reader = threading.Thread(target=lambda: (gh.get_issue(3), done.set()))
        reader.start()
        assert done.wait(10)
    reader.join()


def test_writes_of_one_installation_share_one_pacer(api: respx.MockRouter) -> None:
    api.post("/repos/acme/widgets/issues/3/reactions").respond(201, json={"id": 1})
    t = FakeTime()
    pacers = Pacers(lambda: WritePacer(1.0, clock=t.clock, sleep=t.sleep))
    settings = Settings(app_id=99, private_key=throwaway_key(), github_api_url=API)
    app = GitHubApp(settings, pacers=pacers)
    app.for_repo(7, "acme/widgets").add_reaction(3, "eyes")
    app.for_repo(7, "acme/widgets").add_reaction(3, "rocket")  # another job's gateway, same installation
    assert pacers.drain(10) and t.sleeps == [1.0]
