"""An Actions job log is read with a byte cap: its tail, never the whole of it (issue 32 #7).

The log is text the repository's CI wrote, of any size; it was read whole into memory (256 MiB: 23 s, 1.1 GiB RSS).
The real gateway over respx, with a log host that streams its body in chunks and counts what was taken.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx

from bot.github import repo as github_repo
from bot.github.app import GitHubApp, RepoGateway
from bot.settings import Settings
from tests.support.fake_github import throwaway_key

API = "https://ghe.example.com/api/v3"
LOG_HOST = "https://pipelines.example.net"
LINE = b"2026-01-01T00:00:00.0000000Z some output of a noisy build step that goes on and on\n"
END = b"AssertionError: 6 != 5\n##[error]Process completed with exit code 1.\n"


class Streamed(httpx.SyncByteStream):
    """A log of `lines` noisy lines and the failure at its end, sent in 64 KiB chunks; counts the bytes taken."""

    def __init__(self, lines: int) -> None:
        self.lines, self.sent = lines, 0

    def __iter__(self) -> Iterator[bytes]:
        chunk = LINE * (65536 // len(LINE))
        for _ in range(self.lines // (65536 // len(LINE))):
            self.sent += len(chunk)
            yield chunk
        self.sent += len(END)
        yield END


def _mint(request: httpx.Request) -> httpx.Response:
    assert json.loads(request.content)
    return httpx.Response(201, json={"token": "ghs_job", "expires_at": "2099-01-01T00:00:00Z"})


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        router.post(f"{API}/app/installations/7/access_tokens").mock(side_effect=_mint)
        router.get(f"{API}/repos/acme/w/actions/jobs/11/logs").respond(302, headers={"Location": f"{LOG_HOST}/l"})
        yield router


@pytest.fixture
def gh(api: respx.MockRouter) -> RepoGateway:
    return GitHubApp(Settings(app_id=99, private_key=throwaway_key(), github_api_url=API)).for_repo(7, "acme/w")


def test_a_log_larger_than_the_cap_is_streamed_and_only_its_end_kept(
    api: respx.MockRouter, gh: RepoGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(github_repo, "JOB_LOG_TAIL_BYTES", 64 << 10)
    stream = Streamed(lines=40_000)  # about 3.3 MiB, a server that ignores the Range
    api.get(f"{LOG_HOST}/l").mock(side_effect=lambda request: httpx.Response(200, stream=stream))
    text = gh.job_log(11)
    assert text.endswith(END.decode()) and len(text.encode()) <= (64 << 10) + 200
    assert text.startswith("[… the start of the log left out") and "\n2026-01-01T" in text  # whole lines after it
    assert api.calls.last.request.headers["range"] == f"bytes=-{64 << 10}"


def test_a_log_that_never_ends_is_not_read_past_the_read_cap(
    api: respx.MockRouter, gh: RepoGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(github_repo, "JOB_LOG_TAIL_BYTES", 16 << 10)
    monkeypatch.setattr(github_repo, "JOB_LOG_READ_BYTES", 1 << 20)
    stream = Streamed(lines=100_000)  # about 8 MiB
    api.get(f"{LOG_HOST}/l").mock(side_effect=lambda request: httpx.Response(200, stream=stream))
    text = gh.job_log(11)
    assert stream.sent < (1 << 20) + (64 << 10) and len(text.encode()) <= (16 << 10) + 200
    assert "not read past 1 MiB" in text.splitlines()[0]


def test_a_server_that_honours_the_range_sends_only_the_tail(api: respx.MockRouter, gh: RepoGateway) -> None:
    whole = LINE * 50_000 + END

    def ranged(request: httpx.Request) -> httpx.Response:
        wanted = int(request.headers["range"].removeprefix("bytes=-"))
        start = max(0, len(whole) - wanted)
        headers = {"Content-Range": f"bytes {start}-{len(whole) - 1}/{len(whole)}"}
        return httpx.Response(206, content=whole[start:], headers=headers)

    api.get(f"{LOG_HOST}/l").mock(side_effect=ranged)
    text = gh.job_log(11)
    assert text.endswith(END.decode()) and text.startswith("[… the start of the log left out")
    assert len(text.encode()) <= github_repo.JOB_LOG_TAIL_BYTES + 200


def test_a_small_log_is_kept_whole(api: respx.MockRouter, gh: RepoGateway) -> None:
    small = b"first line\n" + END

    def ranged(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Range": f"bytes 0-{len(small) - 1}/{len(small)}"}
        return httpx.Response(206, content=small, headers=headers)

    api.get(f"{LOG_HOST}/l").mock(side_effect=ranged)
    assert gh.job_log(11) == small.decode()
