"""bot.github against GitHub's real REST paths, with respx (no network)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator

import httpx
import pytest
import respx

from bot.github.app import GitHubApp, RepoGateway
from bot.github.gateway import GitHubError, can_write
from bot.settings import Settings
from tests.support.fake_github import throwaway_key
from tests.support.unpaced import unpaced

API = "https://ghe.example.com/api/v3"
TOKEN = {"token": "ghs_installation", "expires_at": "2099-01-01T00:00:00Z"}


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=API, assert_all_called=False) as router:
        router.post("/app/installations/7/access_tokens").respond(201, json=TOKEN)
        yield router


@pytest.fixture
def gh(api: respx.MockRouter) -> RepoGateway:
    settings = Settings(app_id=99, private_key=throwaway_key(), github_api_url=API)
    return GitHubApp(settings, pacers=unpaced()).for_repo(7, "acme/widgets")


@pytest.mark.parametrize(
    ("role_name", "legacy", "role", "allowed"),
    [
        ("admin", "admin", "admin", True),
        ("maintain", "write", "maintain", True),
        ("write", "write", "write", True),
        ("triage", "read", "triage", False),
        ("read", "read", "read", False),
        ("release-manager", "write", "write", True),  # a custom role based on write
        ("auditor", "read", "read", False),
    ],
)
def test_permission_uses_role_name(
    api: respx.MockRouter, gh: RepoGateway, role_name: str, legacy: str, role: str, allowed: bool
) -> None:
    route = api.get("/repos/acme/widgets/collaborators/bob/permission").respond(
        200, json={"permission": legacy, "role_name": role_name, "user": {"login": "bob"}}
    )
    assert gh.permission("bob") == role and can_write(role) is allowed
    assert route.calls.last.request.headers["Authorization"] == "token ghs_installation"


def test_installation_token_is_narrowed_to_the_repository(api: respx.MockRouter, gh: RepoGateway) -> None:
    api.get("/repos/acme/widgets/collaborators/bob/permission").respond(404, json={"message": "Not Found"})
    assert gh.permission("bob") == "none"
    body = json.loads(api.calls[0].request.content)
    assert body["repositories"] == ["widgets"]
    assert body["permissions"] == {
        "contents": "write",
        "issues": "write",
        "pull_requests": "write",
        "metadata": "read",
    }
    assert api.calls[0].request.headers["Authorization"].startswith("Bearer ")


def test_git_token_is_minted_fresh_with_contents_only(api: respx.MockRouter, gh: RepoGateway) -> None:
    assert gh.git_token() == "ghs_installation"
    body = json.loads(api.calls.last.request.content)
    assert body == {"repositories": ["widgets"], "permissions": {"contents": "write", "metadata": "read"}}


def test_draft_unsupported_falls_back_to_a_ready_pr(api: respx.MockRouter, gh: RepoGateway) -> None:
    error = {
        "message": "Validation Failed",
        "errors": [
            {
                "resource": "PullRequest",
                "code": "custom",
                "message": "Draft pull requests are not supported in this repository.",
            }
        ],
    }
    pr = {
        "number": 5,
        "html_url": "https://ghe/acme/widgets/pull/5",
        "body": "b",
        "draft": False,
        "head": {"ref": "mini-fix/issue-1"},
    }
    route = api.post("/repos/acme/widgets/pulls").mock(
        side_effect=[httpx.Response(422, json=error), httpx.Response(201, json=pr)]
    )
    made = gh.create_pr(title="t", body="b", head="mini-fix/issue-1", base="main")
    assert made.number == 5 and not made.draft
    assert [json.loads(c.request.content)["draft"] for c in route.calls] == [True, False]


def test_duplicate_pr_is_an_error_not_a_fallback(api: respx.MockRouter, gh: RepoGateway) -> None:
    error = {
        "message": "Validation Failed",
        "errors": [{"message": "A pull request already exists for acme:x."}],
    }
    route = api.post("/repos/acme/widgets/pulls").respond(422, json=error)
    with pytest.raises(GitHubError, match=r"HTTP 422.*already exists"):
        gh.create_pr(title="t", body="b", head="x", base="main")
    assert route.call_count == 1


def test_find_open_pr_filters_by_owner_and_branch(api: respx.MockRouter, gh: RepoGateway) -> None:
    route = api.get("/repos/acme/widgets/pulls").respond(200, json=[])
    assert gh.find_open_pr("mini-fix/issue-3") is None
    assert route.calls.last.request.url.params["head"] == "acme:mini-fix/issue-3"
    assert route.calls.last.request.url.params["state"] == "open"


def test_comments_reactions_and_edits_use_the_rest_paths(api: respx.MockRouter, gh: RepoGateway) -> None:
    created = api.post("/repos/acme/widgets/issues/3/comments").respond(201, json={"id": 11, "body": "x"})
    edited = api.patch("/repos/acme/widgets/issues/comments/11").respond(200, json={"id": 11})
    on_issue = api.post("/repos/acme/widgets/issues/3/reactions").respond(201, json={"id": 1})
    on_comment = api.post("/repos/acme/widgets/issues/comments/11/reactions").respond(201, json={"id": 2})
    assert gh.create_comment(3, "hello") == 11
    gh.update_comment(11, "bye")
    gh.add_reaction(3, "eyes")
    gh.add_reaction(3, "rocket", comment_id=11)
    assert json.loads(created.calls.last.request.content) == {"body": "hello"}
    assert json.loads(edited.calls.last.request.content) == {"body": "bye"}
    assert json.loads(on_issue.calls.last.request.content) == {"content": "eyes"}
    assert json.loads(on_comment.calls.last.request.content) == {"content": "rocket"}


def test_list_comments_pages_until_a_short_page(api: respx.MockRouter, gh: RepoGateway) -> None:
    page = [{"id": i, "user": {"login": "u"}, "body": str(i)} for i in range(100)]
    route = api.get("/repos/acme/widgets/issues/3/comments").mock(
        side_effect=[httpx.Response(200, json=page), httpx.Response(200, json=page[:5])]
    )
    assert len(gh.list_comments(3)) == 105 and route.call_count == 2


def test_bot_identity_is_the_app_slug_and_noreply_email(api: respx.MockRouter, gh: RepoGateway) -> None:
    api.get("/app").respond(200, json={"slug": "mini-fix", "id": 99})
    api.get("/users/mini-fix[bot]").respond(200, json={"login": "mini-fix[bot]", "id": 123})
    identity = gh.bot_identity()
    assert identity.name == "mini-fix[bot]"
    assert identity.email == "123+mini-fix[bot]@users.noreply.github.com"


def test_token_minting_failure_becomes_a_github_error(api: respx.MockRouter, gh: RepoGateway) -> None:
    api.post("/app/installations/7/access_tokens").respond(
        401, json={"message": "A JSON web token could not be decoded"}
    )
    with pytest.raises(GitHubError, match=r"HTTP 401.*JSON web token"):
        gh.get_issue(3)


def test_pull_request_issue_is_recognised(api: respx.MockRouter, gh: RepoGateway) -> None:
    api.get("/repos/acme/widgets/issues/4").respond(
        200,
        json={
            "number": 4,
            "title": "t",
            "body": None,
            "user": {"login": "a"},
            "state": "open",
            "pull_request": {},
        },
    )
    issue = gh.get_issue(4)
    assert issue.is_pull_request and issue.body == ""


def test_apps_share_one_tls_context_loaded_once() -> None:
    settings = Settings(app_id=99, private_key=throwaway_key(), github_api_url=API)
    first, second = GitHubApp(settings, pacers=unpaced()), GitHubApp(settings, pacers=unpaced())
    context = first._transport._pool._ssl_context
    assert context is second._transport._pool._ssl_context  # not a CA bundle read per App
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname  # still httpx's verifying default
