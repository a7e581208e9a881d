"""`.devcontainer/devcontainer.json` as the sandbox spec (bot/repo_config/devcontainer.py)."""

from __future__ import annotations

from bot.repo_config.devcontainer import MAX_BYTES, apply, jsonc, parse, read
from bot.repo_config.schema import RepoConfig

ALLOWED = ["mcr.microsoft.com/devcontainers/*"]
IMAGE = "mcr.microsoft.com/devcontainers/go:1"


def test_jsonc_comments_and_trailing_commas_but_not_inside_strings() -> None:
    text = '{\n  // a comment\n  "image": "x//y", /* more */\n  "list": [1, 2,],\n}'
    assert jsonc(text) == {"image": "x//y", "list": [1, 2]}


def test_an_allowed_image_is_used_with_its_post_create_command_as_setup() -> None:
    dev = parse(f'{{"image": "{IMAGE}", "postCreateCommand": "go mod download"}}')
    config, notes = apply(RepoConfig(), dev, ALLOWED)
    assert (config.image, config.setup, notes) == (IMAGE, ["go mod download"], [])
    argv = parse(f'{{"image": "{IMAGE}", "postCreateCommand": ["make", "deps x"]}}')
    assert argv.setup == ["make 'deps x'"]
    named = parse(f'{{"image": "{IMAGE}", "postCreateCommand": {{"a": "one", "b": ["two"]}}}}')
    assert named.setup == ["one", "two"]


def test_the_repositorys_own_config_wins_and_an_unlisted_image_is_reported() -> None:
    dev = parse(f'{{"image": "{IMAGE}", "postCreateCommand": "x"}}')
    own = RepoConfig(image="mini-fix-sandbox:latest")
    assert apply(own, dev, ALLOWED) == (own, [])
    config, notes = apply(RepoConfig(), dev, ["other/*"])
    assert config == RepoConfig() and "not on this deployment's list" in notes[0]
    assert "MINIFIX_DEVCONTAINER_IMAGES" in apply(RepoConfig(), dev, [])[1][0]


def test_a_built_devcontainer_or_features_are_reported_not_used() -> None:
    dev = parse('{"build": {"dockerfile": "Dockerfile"}, "image": "x", "features": {"ghcr.io/f": {}}}')
    assert dev.image is None and len(dev.notes) == 2
    config, notes = apply(RepoConfig(), dev, ["*"])
    assert config == RepoConfig() and "builds its image" in notes[0] and "features" in notes[1]


def test_hostile_files_are_notes_not_errors() -> None:
    assert parse("{not json").notes and parse("[1]").notes and parse(" " * (MAX_BYTES + 1)).notes
    assert parse("[" * 100_000).image is None


def test_read_takes_the_first_path_the_repository_has() -> None:
    files = {".devcontainer.json": f'{{"image": "{IMAGE}"}}'}
    dev, path = read(lambda _repo, p: files.get(p), "o/r")
    assert dev is not None and dev.image == IMAGE and path == ".devcontainer.json"
    assert read(lambda _repo, _p: None, "o/r") == (None, "")
