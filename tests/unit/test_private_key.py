"""The App's private key is checked when it is read: anything but an unencrypted PEM key is refused, saying where."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.settings import Settings, SettingsError
from tests.support.fake_github import throwaway_key


def test_a_pem_key_is_accepted_from_text_or_file(tmp_path: Path) -> None:
    key = throwaway_key()
    assert Settings(private_key=SecretStr(key.replace("\n", "\\n")), _env_file=None).require_private_key() == key
    path = tmp_path / "app.pem"
    path.write_text(key)
    assert Settings(private_key_path=path, _env_file=None).require_private_key() == key


@pytest.mark.parametrize(
    "text",
    [
        "ghp_notakey",
        "-----BEGIN RSA PRIVATE KEY-----\nreplace with the App's private key\n-----END RSA PRIVATE KEY-----\n",
    ],
)
def test_text_that_is_not_a_pem_key_is_refused_without_echoing_it(tmp_path: Path, text: str) -> None:
    with pytest.raises(SettingsError, match="MINIFIX_PRIVATE_KEY is not an unencrypted PEM private key") as raised:
        Settings(private_key=SecretStr(text), _env_file=None).require_private_key()
    assert "replace with" not in str(raised.value) and "ghp_" not in str(raised.value)
    path = tmp_path / "key.pem"
    path.write_bytes(b"\x89PNG\r\n")  # a wrong file: not even text
    with pytest.raises(SettingsError, match="cannot be read"):
        Settings(private_key_path=path, _env_file=None).require_private_key()


def test_a_worker_with_a_non_pem_key_refuses_to_start(tmp_path: Path) -> None:
    from bot.worker.wiring import wire_worker  # what `mini-fix worker` and `serve` build first (exit 2 on this error)

    (tmp_path / "key.pem").write_text("not a key\n")
    settings = Settings(app_id=1, private_key_path=tmp_path / "key.pem", data_dir=tmp_path / "data", _env_file=None)
    with pytest.raises(SettingsError, match=r"key\.pem is not an unencrypted PEM private key"):
        wire_worker(settings)
