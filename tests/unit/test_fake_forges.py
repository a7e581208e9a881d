"""The shared base of the two fake forges (tests/support/fake_forge.py), over real HTTP, for both forges: faults
are answered first, git goes through `git http-backend` behind Basic auth, and each forge keeps its own methods."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.fake_forge import FakeForge
from tests.support.fake_github import FakeGitHub
from tests.support.fake_gitlab import FakeGitLab


@dataclass
class Forge:
    fake: Any
    repo: str  # as the fake names it (branch_head, show)
    git_url: str  # the repository's smart HTTP URL, without credentials
    git_user: str  # the Basic auth user git sends the token as
    token: str
    realm: str
    rest_path: str  # a REST route the token may read
    foreign_method: str  # a method only the other forge serves


def _github() -> Forge:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "widgets", {"calc.py": "x = 1\n"})
    token = fake.mint(1, {})["token"]
    url = f"{fake.base_url}/acme/widgets.git"
    return Forge(fake, "acme/widgets", url, "x-access-token", token, "GitHub", "/repos/acme/widgets", "PUT")


def _gitlab() -> Forge:
    fake = FakeGitLab()
    fake.start()
    fake.add_project("acme/tools/widgets", {"calc.py": "x = 1\n"})
    url = f"{fake.base_url}/acme/tools/widgets.git"
    path = "/api/v4/projects/acme%2Ftools%2Fwidgets"
    return Forge(fake, "acme/tools/widgets", url, "oauth2", fake.bot_token, "GitLab", path, "PATCH")


@pytest.fixture(params=[_github, _gitlab], ids=["github", "gitlab"])
def forge(request: pytest.FixtureRequest) -> Iterator[Forge]:
    made: Forge = request.param()
    yield made
    made.fake.stop()


def _auth(forge: Forge) -> dict[str, str]:
    if isinstance(forge.fake, FakeGitHub):
        return {"Authorization": f"token {forge.token}"}
    return {"PRIVATE-TOKEN": forge.token}


def test_both_fakes_are_thin_forges(forge: Forge) -> None:
    assert isinstance(forge.fake, FakeForge) and forge.fake.base_url.startswith("http://127.0.0.1:")


def test_git_with_the_token_is_served_by_http_backend(forge: Forge) -> None:
    authed = forge.git_url.replace("http://", f"http://{forge.git_user}:{forge.token}@")
    out = subprocess.run(["git", "ls-remote", authed, "refs/heads/main"], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == forge.fake.branch_head(forge.repo, "main")
    assert forge.fake.show(forge.repo, "main", "calc.py") == "x = 1\n"
    # git asks without credentials first, as it does against the real forges, then with them
    assert forge.fake.git_requests[-1] == (urlsplit(forge.git_url).path + "/git-upload-pack", 200)


def test_git_without_the_token_is_refused_with_the_forges_realm(forge: Forge) -> None:
    answer = httpx.get(f"{forge.git_url}/info/refs?service=git-upload-pack")
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"] == f'Basic realm="{forge.realm}"'
    assert forge.fake.git_requests == [(urlsplit(forge.git_url).path + "/info/refs", 401)]


def test_an_injected_rest_fault_is_answered_before_the_route(forge: Forge) -> None:
    forge.fake.faults.add("GET", re.escape(forge.rest_path) + "$", 429, headers={"Retry-After": "3"})
    first = httpx.get(forge.fake.base_url + forge.rest_path, headers=_auth(forge))
    second = httpx.get(forge.fake.base_url + forge.rest_path, headers=_auth(forge))
    assert (first.status_code, first.headers["Retry-After"], first.json()) == (429, "3", {"message": "injected"})
    assert second.status_code == 200
    assert forge.fake.requests == [("GET", forge.rest_path)] * 2


def test_an_injected_git_fault_never_reaches_the_repository(forge: Forge) -> None:
    forge.fake.faults.add("*", r"\.git/", 502)
    answer = httpx.get(f"{forge.git_url}/info/refs?service=git-upload-pack")
    assert answer.status_code == 502 and forge.fake.git_requests[-1][1] == 502
    # GitHub's git fault is bare, as git reads no JSON; GitLab's carries the JSON body
    assert answer.content == (b"" if forge.realm == "GitHub" else b'{"message": "injected"}')


def test_each_forge_serves_only_its_own_methods(forge: Forge) -> None:
    answer = httpx.request(forge.foreign_method, forge.fake.base_url + forge.rest_path, headers=_auth(forge))
    assert answer.status_code == 501 and forge.fake.requests == []
