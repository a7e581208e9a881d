"""What the worker reads and writes outside the sandbox: files from git objects, the token off argv, secrets
redacted, ceilings, linear-time text handling, expiring links, defused mentions and closing keywords."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot import signing
from bot.jobs import Outcome
from bot.pipeline.admit.gate import guidance
from bot.pipeline.ceilings import clamp
from bot.pipeline.git import gitops
from bot.pipeline.publish.checks import untrusted_summary
from bot.pipeline.publish.outbound import RedactingGateway
from bot.render import outcome, render, untrusted
from bot.repo_config.schema import RepoConfig
from bot.settings import Settings
from tests.security.repos import checkout
from tests.support.fake_github import FakeGitHub, throwaway_key

SECRET = "webhook-secret-for-links-0123"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "widgets", {"calc.py": "x = 1\n"})
    yield fake
    fake.stop()


def test_agents_md_as_a_symlink_or_a_huge_file_is_not_read(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text(throwaway_key())
    repo = checkout(tmp_path / "a", {"README.md": "x\n"}, links={"AGENTS.md": str(key)})
    assert guidance(RepoConfig(), repo) == ""
    big = checkout(tmp_path / "b", {"AGENTS.md": "x" * (300 << 10)})
    assert guidance(RepoConfig(), big) == ""
    real = checkout(tmp_path / "c", {"AGENTS.md": "Run make test.\n"})
    (real / "AGENTS.md").unlink()
    (real / "AGENTS.md").symlink_to(key)  # the working tree lies; the objects do not
    assert "Run make test." in guidance(RepoConfig(), real) and "PRIVATE KEY" not in guidance(RepoConfig(), real)


def test_the_token_travels_in_the_environment_never_on_argv(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim = tmp_path / "bin"
    shim.mkdir()
    argv_log = tmp_path / "argv.log"
    real_git = next(Path(p) / "git" for p in os.environ["PATH"].split(":") if (Path(p) / "git").is_file())
    (shim / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {argv_log}\nexec {real_git} "$@"\n')
    (shim / "git").chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    token = str(github.mint(7, {"repositories": ["widgets"]})["token"])
    repo = tmp_path / "repo"
    gitops.clone(f"{github.base_url}/acme/widgets.git", token, repo, branch="main")
    assert (repo / "calc.py").is_file()
    logged = argv_log.read_text()
    assert "clone" in logged and token not in logged and "Authorization" not in logged
    assert token not in (repo / ".git" / "config").read_text()


def test_every_secret_the_worker_holds_is_in_the_redaction_list(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    pem = throwaway_key()
    key.write_text(pem)
    settings = Settings(
        webhook_secret=SecretStr(SECRET),
        private_key_path=key,
        database_url="postgresql://mini:db-password-42@db/mini",
        operator_token=SecretStr("operator-token-xyz"),
        _env_file=None,
    )
    secrets = settings.secrets
    assert pem.strip() in secrets and SECRET in secrets and "operator-token-xyz" in secrets
    assert "db-password-42" in secrets
    assert all(line in secrets for line in pem.splitlines() if len(line) >= 32)  # a key leaked line by line


def test_every_write_to_github_is_redacted(github: FakeGitHub) -> None:
    from bot.github.app import GitHubApp

    settings = Settings(
        app_id=github.app_id, private_key=throwaway_key(), github_api_url=github.base_url, _env_file=None
    )
    issue = github.add_issue("acme/widgets", "t", "b", author="alice")
    gh = RedactingGateway(GitHubApp(settings).for_repo(7, "acme/widgets"), ["s3cr3t-value"])
    token = gh.git_token()
    comment = gh.create_comment(issue, f"leak s3cr3t-value and {token}")
    gh.update_comment(comment, f"again s3cr3t-value {token}")
    pr = gh.create_pr(title="s3cr3t-value", body=f"{token}", head="main", base="main")
    bodies = (
        [c["body"] for c in github.comments] + [p["body"] for p in github.pulls] + [p["title"] for p in github.pulls]
    )
    assert pr.number and all("s3cr3t-value" not in b and token not in b for b in bodies) and "***" in bodies[0]


def test_a_repositorys_limits_images_and_models_are_held_to_the_ceilings() -> None:
    settings = Settings(_env_file=None, max_steps=100, max_memory="4g", max_disk="2g", model="hosted_vllm/coder")
    asked = RepoConfig.model_validate(
        {
            "limits": {
                "steps": 10**9,
                "tokens": 10**12,
                "wall_time": 10**9,
                "memory": "0",
                "cpus": 64,
                "disk": "1000g",
            },
            "image": "attacker/image:latest",
            "model": "openai/gpt-4o",
            "setup": ["pip install ."],
            "setup_network": True,
        }
    )
    config, notes = clamp(asked, settings)
    limits = config.limits
    assert (limits.steps, limits.tokens, limits.wall_time) == (100, settings.max_tokens, settings.max_wall_time)
    assert (limits.memory, limits.cpus, limits.disk) == ("4g", settings.max_cpus, "2g")
    assert config.image is None and config.model is None and config.setup_network is False
    assert len(notes) == 9
    fine, none = clamp(RepoConfig.model_validate({"limits": {"steps": 30}, "model": "hosted_vllm/other"}), settings)
    assert none == [] and fine.model == "hosted_vllm/other"


def test_closing_keywords_and_mentions_are_defused_in_linear_time() -> None:
    text = "fixes #12, Closes: acme/other#3 and resolved  #4; ping @acme/core and @alice"
    safe = untrusted(text)
    assert "@\u200bacme/core" in safe and "@\u200balice" in safe
    assert "fixes\u200b #12" in safe and "Closes\u200b: acme/other#3" in safe and "resolved\u200b  #4" in safe
    # A quadratic pattern would spend minutes here (8 K spaces took 1.9 s); this input is 25× longer.
    hostile = "fix" + " " * 200_000 + "x"
    assert untrusted_summary(hostile).startswith("fix")
    assert untrusted("fix" + " " * 200_000 + "#1", limit=300_000).startswith("fix\u200b")


def test_failure_comments_defuse_repository_and_agent_text() -> None:
    run = {"run_id": "r1", "model": "m", "requester": "alice", "retry": False, "exit_status": ""}
    body = render(
        "outcome_comment.md",
        outcome=outcome(Outcome.SETUP_FAILED, run=run, paths=[]),
        run=run,
        detail="`make` exited with 2: @acme/security please look, fixes #1",
        stats=None,
        links={"pr": None, "run": None},
    )
    assert "@acme" not in body and "@\u200bacme/security" in body and "fixes #1" not in body


def test_signed_links_expire_and_malformed_signatures_are_refused() -> None:
    settings = Settings(webhook_secret=SecretStr(SECRET), public_url="https://fix.example.com", _env_file=None)
    query = signing.run_query(settings, "run1", now=1_000_000)
    fields = dict(part.split("=") for part in query.split("&"))
    expires = int(fields["exp"])
    assert expires == 1_000_000 + 30 * 86_400

    def check(sig: str, exp: str, now: float) -> bool:
        link = {"sig": sig, "exp": exp, "v": fields["v"]}
        return signing.check_link(settings, "run1", link, lambda: None, now=now)

    assert check(fields["sig"], fields["exp"], now=expires - 1)
    assert not check(fields["sig"], fields["exp"], now=expires + 1)
    assert not check(fields["sig"], str(expires + 86_400), now=expires - 1)
    assert not check("é" * 32, fields["exp"], now=0)
    assert not check(fields["sig"], "１２３", now=0)  # non-ASCII digits


def test_a_clone_over_the_size_cap_is_refused_before_the_sandbox_sees_it(github: FakeGitHub, tmp_path: Path) -> None:
    from bot.github.gateway import RepoInfo
    from bot.pipeline.attempts.execute import RunFailed, clone

    token = str(github.mint(7, {"repositories": ["widgets"]})["token"])
    info = RepoInfo("acme/widgets", "main", f"{github.base_url}/acme/widgets.git", private=False)
    with pytest.raises(RunFailed) as refused:
        clone(info, token, tmp_path / "small", max_bytes=64)
    assert refused.value.outcome == Outcome.CLONE_FAILED and "over the limit of 64" in refused.value.detail
    clone(info, token, tmp_path / "fine", max_bytes=10 << 20)
    assert (tmp_path / "fine" / "calc.py").is_file()
