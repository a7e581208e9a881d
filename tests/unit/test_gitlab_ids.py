from __future__ import annotations

import pytest

from bot.forge_ids import installation_of, is_gitlab


def test_a_groups_projects_share_one_negative_installation_id() -> None:
    a, b = installation_of("acme/app"), installation_of("Acme/sub/lib")
    assert a == b and a < 0 and is_gitlab(a)
    assert installation_of("other/app") != a
    assert not is_gitlab(12345)  # GitHub's installation ids are positive


def test_a_project_path_without_a_namespace_is_refused() -> None:
    with pytest.raises(ValueError):
        installation_of("/")


def test_gitlab_secrets_are_redacted_like_githubs() -> None:
    from pydantic import SecretStr

    from bot.settings import Settings

    s = Settings(
        webhook_secret=SecretStr("gh-secret-123"),
        gitlab_url="https://gitlab.example.org",
        gitlab_token=SecretStr("glpat-abcdefghijklmnop"),
        gitlab_webhook_secret=SecretStr("gl-hook-secret-1"),
    )
    assert {"glpat-abcdefghijklmnop", "gl-hook-secret-1"} <= set(s.secrets)


def test_a_merge_requests_url_gives_its_lifted_number_and_a_prs_its_own() -> None:
    from bot.forge_ids import mr_number
    from bot.ledger.pr_outcomes import pull_of

    assert pull_of("https://gitlab.example.org/g/sub/p/-/merge_requests/7") == mr_number(7)
    assert pull_of("https://github.com/o/r/pull/7") == 7
    assert pull_of("https://example.org/o/r/issues/7") is None
